-- energy_cluster_daily: GPU energy per cluster per day, in kWh, from DCGM_FI_DEV_POWER_USAGE.
-- Each power sample (W) stands for the scrape interval that ends at it: energy = sum(W × s) /
-- 3.6e6 kWh. The interval is taken as 60 s (the demo's and dcgm-exporter's usual scrape
-- interval); GPU power only, not the host or the facility (multiply by PUE for that).
--   energy_kwh   GPU energy, kWh
--   samples      power samples, count
-- Aggregate plan over a join: new samples, joined with nodes (for the cluster) as it is, fold
-- into the per-day, per-cluster state; a change of nodes (a host moved to another cluster)
-- recomputes the days and clusters it touches (the old cluster's found through the logged old
-- row), or refreshes fully where finding them would read all the telemetry.
CREATE DYNAMIC TABLE energy_cluster_daily WITH (freshness = '1 hour', refresh_mode = 'auto') AS
SELECT date_trunc('day', m.ts) AS day,
       n.cluster,
       sum(m.value * 60.0) / 3.6e6 AS energy_kwh,
       count(*) AS samples
FROM gpu_metrics m JOIN nodes n ON n.host = m.host
WHERE m.metric = 'DCGM_FI_DEV_POWER_USAGE'
GROUP BY ALL
