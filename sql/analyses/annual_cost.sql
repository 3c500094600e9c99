-- annual_cost: Annual electricity cost per cluster at a tariff, from measured GPU power and the site's PUE.
--
-- The cluster's GPU power is its mean measured power per GPU (gpu_hourly_host) times its GPUs,
-- or gpu_power_w(tdp, $utilization, idle) where no telemetry covers it; facility power applies
-- the site's PUE; annual_energy_cost() prices 8,760 hours of it at $tariff_usd_per_kwh, next
-- to the cost at the site's own tariff.
--
-- Parameters:
--   $tariff_usd_per_kwh   DOUBLE = 0.10   electricity price, USD per kWh
--   $utilization          DOUBLE = 0.7    GPU utilisation where no telemetry says, fraction
-- Columns:
--   cluster               cluster
--   site                  site
--   gpus                  GPUs in the inventory
--   watts_per_gpu         mean power per GPU, W (measured, or modelled)
--   measured              whether watts_per_gpu comes from telemetry
--   it_mw                 GPU power, MW
--   facility_mw           facility power at the site's PUE, MW
--   annual_cost_usd       a year at $tariff_usd_per_kwh, USD
--   annual_cost_site      a year at the site's tariff, the site's currency
WITH inventory AS (
    SELECT n.cluster, n.site, any_value(n.gpu_model) AS gpu_model, CAST(sum(n.gpus) AS BIGINT) AS gpus
    FROM nodes AS n GROUP BY n.cluster, n.site
), measured AS (
    SELECT n.cluster, sum(h.power_w * n.gpus) / sum(n.gpus) AS watts
    FROM gpu_hourly_host AS h JOIN nodes AS n USING (host)
    WHERE h.power_w IS NOT NULL GROUP BY n.cluster
), power AS (
    SELECT i.*, s.pue, s.price_per_kwh, m.watts IS NOT NULL AS measured,
           coalesce(m.watts, gpu_power_w(g.tdp_w, $utilization, coalesce(g.idle_w, 0.1 * g.tdp_w))) AS watts
    FROM inventory AS i
    JOIN sites AS s USING (site)
    LEFT JOIN gpu_models AS g ON g.model = i.gpu_model
    LEFT JOIN measured AS m USING (cluster)
    WHERE i.gpus > 0
), facility AS (
    SELECT *, gpu_power_mw(gpus, watts) AS it_mw,
           facility_power_mw(gpu_power_mw(gpus, watts), pue) AS fac_mw
    FROM power
)
SELECT cluster, site, gpus,
       round(watts, 1) AS watts_per_gpu, measured,
       round(it_mw, 3) AS it_mw,
       round(fac_mw, 3) AS facility_mw,
       round(annual_energy_cost(fac_mw, $tariff_usd_per_kwh)) AS annual_cost_usd,
       round(annual_energy_cost(fac_mw, price_per_kwh)) AS annual_cost_site
FROM facility
ORDER BY annual_cost_usd DESC, cluster, site
