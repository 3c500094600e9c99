-- gpu_utilisation: Measured GPU utilisation and power per cluster per hour, from the gpu_hourly_host dynamic table.
--
-- Reads the shipped dynamic table gpu_hourly_host (hourly per-host averages of
-- DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_POWER_USAGE, kept fresh incrementally) joined to the
-- inventory; each host weighs by its number of GPUs.
--
-- Parameters:
--   $cluster       VARCHAR = ''   only this cluster ('' = every cluster)
-- Columns:
--   cluster        cluster
--   hour           hour, UTC
--   hosts          hosts reporting, count
--   util_pct       mean GPU utilisation, %
--   power_w        mean power per GPU, W
--   it_power_kw    GPU power of the cluster's reporting hosts, kW
SELECT n.cluster, h.hour,
       count(*) AS hosts,
       round(sum(h.util_pct * n.gpus) / sum(n.gpus) FILTER (WHERE h.util_pct IS NOT NULL), 1) AS util_pct,
       round(sum(h.power_w * n.gpus) / sum(n.gpus) FILTER (WHERE h.power_w IS NOT NULL), 1) AS power_w,
       round(sum(h.power_w * n.gpus) / 1e3, 1) AS it_power_kw
FROM gpu_hourly_host AS h JOIN nodes AS n USING (host)
WHERE $cluster = '' OR n.cluster = $cluster
GROUP BY ALL
ORDER BY n.cluster, h.hour
