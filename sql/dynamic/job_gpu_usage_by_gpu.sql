-- job_gpu_usage_by_gpu: what each job did with each GPU (or MIG instance) it held, from
-- job_gpu_usage_daily (see there for how a sample is attributed) summed over the days.
--   samples, gpu_seconds, idle_gpu_seconds, energy_kwh   summed over the days
--   util_pct, sm_active, power_w                         means over all the GPU's samples
--   fb_used_max_mib, first_ts, last_ts                   over all the days
-- Reads a dynamic table: a refresh recomputes the job × GPU rows whose days changed (a chain).
CREATE DYNAMIC TABLE job_gpu_usage_by_gpu WITH (freshness = '5 minutes', refresh_mode = 'incremental') AS
SELECT job_id,
       host,
       gpu,
       uuid,
       gpu_instance,
       sum(samples) AS samples,
       sum(gpu_seconds) AS gpu_seconds,
       sum(util_pct * samples) / nullif(sum(samples), 0) AS util_pct,
       sum(idle_gpu_seconds) AS idle_gpu_seconds,
       sum(sm_active * samples) / nullif(sum(samples) FILTER (WHERE sm_active IS NOT NULL), 0) AS sm_active,
       max(fb_used_max_mib) AS fb_used_max_mib,
       sum(power_w * samples) / nullif(sum(samples) FILTER (WHERE power_w IS NOT NULL), 0) AS power_w,
       sum(energy_kwh) AS energy_kwh,
       min(first_ts) AS first_ts,
       max(last_ts) AS last_ts
FROM job_gpu_usage_daily
GROUP BY job_id, host, gpu, uuid, gpu_instance
