-- power_by_cluster: Power by cluster over time: GPU (IT) power measured, facility power at the site's PUE.
--
-- From the gpu_hourly_host dynamic table (hourly mean power per GPU per host): the cluster's
-- GPU power is Σ power_w × GPUs over its reporting hosts; facility power multiplies by the
-- site's PUE (sites.pue), facility_power_mw(). GPUs only: CPUs, memory and network add more.
--
-- Parameters:
--   $cluster          VARCHAR = ''   only this cluster ('' = every cluster)
-- Columns:
--   cluster           cluster
--   site              site
--   hour              hour, UTC
--   gpu_power_kw      GPU power, kW
--   pue               the site's power usage effectiveness, ratio
--   facility_kw       facility power for that GPU load, kW
WITH per_hour AS (
    SELECT n.cluster, n.site, h.hour, sum(h.power_w * n.gpus) / 1e3 AS gpu_power_kw
    FROM gpu_hourly_host AS h JOIN nodes AS n USING (host)
    WHERE h.power_w IS NOT NULL AND ($cluster = '' OR n.cluster = $cluster)
    GROUP BY ALL
)
SELECT p.cluster, p.site, p.hour,
       round(p.gpu_power_kw, 1) AS gpu_power_kw,
       s.pue,
       round(facility_power_mw(p.gpu_power_kw / 1e3, s.pue) * 1e3, 1) AS facility_kw
FROM per_hour AS p LEFT JOIN sites AS s USING (site)
ORDER BY p.cluster, p.hour
