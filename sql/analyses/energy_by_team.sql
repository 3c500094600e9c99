-- energy_by_team: Energy, cost and carbon per team (account) and per job, at each site's PUE, tariff and grid intensity.
--
-- A job's GPU power is modelled from its GPUs' TDP and idle draw at the utilisation its
-- cluster measured (mean DCGM_FI_DEV_GPU_UTIL, from gpu_hourly_host), or $utilization where no
-- telemetry covers it: gpu_power_w(tdp, util, idle). Energy is that power over the job's run
-- (energy_kwh), times the site's PUE; cost uses the site's tariff (sites.price_per_kwh) and
-- carbon its grid intensity. One row per team, with its costliest job.
--
-- Parameters:
--   $utilization          DOUBLE = 0.7    GPU utilisation where no telemetry says, fraction
-- Columns:
--   team                  account
--   jobs                  jobs with a known run time and placement, count
--   gpu_hours             GPU-hours, GPU-h
--   facility_kwh          facility energy (GPU energy × PUE), kWh
--   cost                  electricity cost at the sites' tariffs, currency
--   carbon_t              emissions, t CO2e
--   cost_per_gpu_hour     cost / gpu_hours, currency per GPU-h
--   costliest_job         the team's job that cost the most
--   costliest_job_cost    what it cost, currency
WITH util AS (
    SELECT n.cluster, avg(h.util_pct) / 100 AS util
    FROM gpu_hourly_host AS h JOIN nodes AS n USING (host) GROUP BY n.cluster
), placed AS (
    SELECT j.job_id, coalesce(j.account, '(none)') AS team, j.gpus, j.elapsed_s,
           n.cluster, n.site, n.gpu_model
    FROM jobs AS j
    JOIN nodes AS n ON n.host = j.node_list[1]
    WHERE j.gpus > 0 AND j.elapsed_s > 0
), modelled AS (
    SELECT p.*, s.pue, s.price_per_kwh, s.grid_g_per_kwh,
           gpu_power_w(g.tdp_w, coalesce(u.util, $utilization), coalesce(g.idle_w, 0.1 * g.tdp_w)) AS watts
    FROM placed AS p
    JOIN gpu_models AS g ON g.model = p.gpu_model
    JOIN sites AS s ON s.site = p.site
    LEFT JOIN util AS u ON u.cluster = p.cluster
), per_job AS (
    SELECT *, energy_kwh(watts * gpus, elapsed_s) * pue AS kwh FROM modelled
), costed AS (
    SELECT *, kwh * price_per_kwh AS cost, carbon_kg(kwh, grid_g_per_kwh) AS kg FROM per_job
)
SELECT team,
       count(*) AS jobs,
       round(sum(gpus * elapsed_s) / 3600, 1) AS gpu_hours,
       round(sum(kwh), 1) AS facility_kwh,
       round(sum(cost), 2) AS cost,
       round(sum(kg) / 1e3, 3) AS carbon_t,
       round(sum(cost) / (sum(gpus * elapsed_s) / 3600), 4) AS cost_per_gpu_hour,
       arg_max(job_id, cost) AS costliest_job,
       round(max(cost), 2) AS costliest_job_cost
FROM costed
GROUP BY team
ORDER BY cost DESC
