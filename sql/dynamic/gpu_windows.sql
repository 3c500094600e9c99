-- gpu_windows: per GPU and 5-minute window, the means the health rules compare GPUs by (SM
-- activity, utilisation, power, temperature, SM clock), its first and newest sample and the
-- sample count.
-- The straggler, thermal and silence rules of `wanka health` (sql/health/) read these rows, not
-- the samples: at 10,000 GPUs a day is 2.9M rows here against 230M samples.
-- Incremental (aggregate plan): each refresh folds only the new telemetry batches in.
CREATE DYNAMIC TABLE gpu_windows WITH (freshness = '1 minute', refresh_mode = 'incremental') AS
SELECT time_bucket(INTERVAL '5 minutes', ts) AS w,
       host, gpu, uuid, model,
       avg(value) FILTER (WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE') AS sm_active,
       avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') AS util_pct,
       avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_POWER_USAGE') AS power_w,
       avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_TEMP') AS temp_c,
       avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_SM_CLOCK') AS sm_clock_mhz,
       min(ts) AS first_ts,
       max(ts) AS last_ts,
       count(*) AS samples
FROM gpu_metrics
WHERE metric IN ('DCGM_FI_PROF_SM_ACTIVE', 'DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_POWER_USAGE',
                 'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_SM_CLOCK')
    AND NOT isnan(value)
GROUP BY ALL
