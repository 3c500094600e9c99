-- job_gpu_usage_daily: what each job did with each GPU (or MIG instance) it held, measured, per
-- UTC day (`day`): a job's row for a day no longer changes once the day's telemetry is in, and
-- retention can drop old raw samples without a refresh losing what was derived from them.
-- job_gpu_usage_by_gpu sums it per job × GPU, job_gpu_usage per job.
-- A sample belongs to a job when its labels name the job (dcgm-exporter's `hpc_job`, or
-- Kubernetes' namespace/pod: the GPU's 'labels' row in gpu_attribution), or, when they name
-- none, when the job held the GPU at the sample's time by scontrol or whole-node information
-- (warehouse/attribution.py). A GPU several jobs share sends one copy of each sample per job,
-- each naming its job: every job counts the GPU once, and no job counts another's copy.
--   day               the UTC day of the samples
--   samples           DCGM_FI_DEV_GPU_UTIL samples attributed
--   gpu_seconds       the time they cover: their span × n / (n - 1), n scrapes of equal spacing
--   util_pct          mean GPU utilisation, percent
--   idle_gpu_seconds  gpu_seconds × the share of samples below 1 % utilisation
--   sm_active         mean DCGM_FI_PROF_SM_ACTIVE in percent (NULL without profiling fields)
--   fb_used_max_mib   most framebuffer memory used, MiB
--   power_w           mean power draw, W
--   energy_kwh        from the energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ) where
--                     it was scraped, scaled like gpu_seconds; else power_w × gpu_seconds
--   first_ts, last_ts the first and last attributed sample
-- Aggregate plan over a join: new samples fold into the per job × GPU state; a change of
-- gpu_attribution (a job starting or ending on an interval source, a GPU first seen with
-- labels) recomputes the groups it touches.
CREATE DYNAMIC TABLE job_gpu_usage_daily WITH (freshness = '5 minutes', refresh_mode = 'incremental') AS
SELECT time_bucket(INTERVAL '1 day', m.ts) AS day,
       coalesce(coalesce(m.labels->>'hpc_job', CASE WHEN m.labels->>'pod' IS NOT NULL THEN coalesce(m.labels->>'namespace', '') || '/' || (m.labels->>'pod') END), a.job_id) AS job_id,
       m.host,
       m.gpu,
       m.uuid,
       m.labels->>'GPU_I_ID' AS gpu_instance,
       count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL') AS samples,
       epoch(max(m.ts) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL')
             - min(m.ts) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL'))
         * count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL')
         / greatest(count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL') - 1, 1) AS gpu_seconds,
       avg(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL') AS util_pct,
       epoch(max(m.ts) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL')
             - min(m.ts) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL'))
         * count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL' AND m.value < 1)
         / greatest(count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL') - 1, 1) AS idle_gpu_seconds,
       100 * avg(m.value) FILTER (WHERE m.metric = 'DCGM_FI_PROF_SM_ACTIVE') AS sm_active,
       max(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_FB_USED') AS fb_used_max_mib,
       avg(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_POWER_USAGE') AS power_w,
       CASE WHEN count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION') >= 2
            THEN (max(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION')
                  - min(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'))
                 * count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION')
                 / (count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION') - 1)
                 / 3.6e9
            ELSE avg(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_POWER_USAGE')
                 * epoch(max(m.ts) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL')
                         - min(m.ts) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL'))
                 * count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL')
                 / greatest(count(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL') - 1, 1)
                 / 3.6e6
       END AS energy_kwh,
       min(m.ts) AS first_ts,
       max(m.ts) AS last_ts
FROM gpu_metrics m JOIN gpu_attribution a ON a.host = m.host AND a.gpu = m.gpu
WHERE m.metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_PROF_SM_ACTIVE', 'DCGM_FI_DEV_FB_USED',
                   'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION')
  AND CASE WHEN a.source = 'labels'
           THEN m.labels->>'hpc_job' IS NOT NULL OR m.labels->>'pod' IS NOT NULL
           ELSE m.labels->>'hpc_job' IS NULL AND m.labels->>'pod' IS NULL
                AND m.ts >= a.start_at AND (a.end_at IS NULL OR m.ts < a.end_at)
                AND (a.gpu_instance IS NULL OR a.gpu_instance = m.labels->>'GPU_I_ID')
      END
GROUP BY ALL
