-- job_gpu_usage: one row per job, from job_gpu_usage_by_gpu (what each of its GPUs did).
--   gpus_seen         GPUs (or MIG instances) with attributed samples
--   gpu_seconds       their time, summed; idle_gpu_seconds the part below 1 % utilisation
--   util_pct          mean GPU utilisation over all the job's samples, percent
--   util_p50          the median over its GPUs of each GPU's mean utilisation, percent
--   sm_active         mean SM activity, percent, weighted by samples (NULL without profiling)
--   fb_used_max_mib   the most framebuffer memory any of its GPUs used, MiB
--   power_w           mean power draw of one GPU, W; energy_kwh the GPUs' energy, kWh
--   first_ts, last_ts the first and last attributed sample
-- Reads a dynamic table: a refresh recomputes the jobs whose GPU rows its source's refresh
-- rewrote (a chain, warehouse/dynamic/chain.py) — the running jobs, from their GPUs' rows.
CREATE DYNAMIC TABLE job_gpu_usage WITH (freshness = '5 minutes', refresh_mode = 'incremental') AS
SELECT job_id,
       count(*) AS gpus_seen,
       sum(gpu_seconds) AS gpu_seconds,
       sum(util_pct * samples) / nullif(sum(samples), 0) AS util_pct,
       median(util_pct) AS util_p50,
       sum(sm_active * samples) / nullif(sum(samples) FILTER (WHERE sm_active IS NOT NULL), 0) AS sm_active,
       max(fb_used_max_mib) AS fb_used_max_mib,
       sum(power_w * samples) / nullif(sum(samples) FILTER (WHERE power_w IS NOT NULL), 0) AS power_w,
       sum(energy_kwh) AS energy_kwh,
       sum(idle_gpu_seconds) AS idle_gpu_seconds,
       min(first_ts) AS first_ts,
       max(last_ts) AS last_ts
FROM job_gpu_usage_by_gpu
GROUP BY job_id
