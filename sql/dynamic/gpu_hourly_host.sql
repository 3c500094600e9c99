-- gpu_hourly_host: hourly GPU utilisation (%) and power (W) per host, from gpu_metrics.
-- Incremental (aggregate plan): each refresh folds only the new telemetry batches into the
-- per-host, per-hour sums and counts.
CREATE DYNAMIC TABLE gpu_hourly_host WITH (freshness = '5 minutes', refresh_mode = 'incremental') AS
SELECT time_bucket(INTERVAL '1 hour', ts) AS hour,
       host,
       avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') AS util_pct,
       avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_POWER_USAGE') AS power_w,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_POWER_USAGE') AS max_power_w,
       count(*) AS samples
FROM gpu_metrics
WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_POWER_USAGE')
GROUP BY ALL
