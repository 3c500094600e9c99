-- energy_by_team: Energy, cost and carbon per team (account) and per job, at each site's PUE, tariff and grid intensity.
--
-- A job's GPU energy is measured where telemetry covers it: the energy job_gpu_usage_by_gpu
-- attributes to its GPUs (their energy counter, else mean power × time) for the GPU-seconds it
-- saw. The rest of the job's GPU-seconds (gpus × elapsed_s, less what telemetry saw; all of
-- them for a job without telemetry) are modelled from its GPUs' TDP and idle draw at the
-- utilisation its cluster measured (mean DCGM_FI_DEV_GPU_UTIL, from gpu_hourly_host), or
-- $utilization where no telemetry covers the cluster: gpu_power_w(tdp, util, idle), over that
-- time (energy_kwh). Both are taken to the facility at the site's PUE; cost uses the site's
-- tariff (sites.price_per_kwh) and carbon its grid intensity. One row per team, with its
-- costliest job; measured_kwh and modelled_kwh say how much of facility_kwh came from which.
-- Telemetry names a pod 'namespace/pod': a job's telemetry is that of its id or, for a pod,
-- of 'account/id'.
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
--   measured_jobs         jobs whose energy telemetry measured (for the part it covered), count
--   measured_kwh          the part of facility_kwh measured, kWh
--   modelled_kwh          the part of facility_kwh modelled, kWh
WITH util AS (
    SELECT n.cluster, avg(h.util_pct) / 100 AS util
    FROM gpu_hourly_host AS h JOIN nodes AS n USING (host) GROUP BY n.cluster
), measured AS (
    SELECT job_id, sum(energy_kwh) AS gpu_kwh, sum(gpu_seconds) AS gpu_s
    FROM job_gpu_usage_by_gpu
    WHERE energy_kwh IS NOT NULL
    GROUP BY job_id
), placed AS (
    SELECT j.job_id, coalesce(j.account, '(none)') AS team, j.gpus, j.elapsed_s,
           n.cluster, n.site, n.gpu_model,
           coalesce(m.gpu_kwh, 0) + coalesce(pod.gpu_kwh, 0) AS measured_gpu_kwh,
           coalesce(m.gpu_s, 0) + coalesce(pod.gpu_s, 0) AS measured_gpu_s,
           m.job_id IS NOT NULL OR pod.job_id IS NOT NULL AS is_measured
    FROM jobs AS j
    JOIN nodes AS n ON n.host = j.node_list[1]
    LEFT JOIN measured AS m ON m.job_id = j.job_id
    LEFT JOIN measured AS pod ON pod.job_id = j.account || '/' || j.job_id
    WHERE j.gpus > 0 AND j.elapsed_s > 0
), modelled AS (
    SELECT p.*, s.pue, s.price_per_kwh, s.grid_g_per_kwh,
           gpu_power_w(g.tdp_w, coalesce(u.util, $utilization), coalesce(g.idle_w, 0.1 * g.tdp_w)) AS watts
    FROM placed AS p
    JOIN gpu_models AS g ON g.model = p.gpu_model
    JOIN sites AS s ON s.site = p.site
    LEFT JOIN util AS u ON u.cluster = p.cluster
), per_job AS (
    SELECT *, measured_gpu_kwh * pue AS measured_kwh,
           energy_kwh(watts, greatest(gpus * elapsed_s - measured_gpu_s, 0)) * pue AS modelled_kwh
    FROM modelled
), costed AS (
    SELECT *, measured_kwh + modelled_kwh AS kwh,
           (measured_kwh + modelled_kwh) * price_per_kwh AS cost,
           carbon_kg(measured_kwh + modelled_kwh, grid_g_per_kwh) AS kg
    FROM per_job
)
SELECT team,
       count(*) AS jobs,
       round(sum(gpus * elapsed_s) / 3600, 1) AS gpu_hours,
       round(sum(kwh), 1) AS facility_kwh,
       round(sum(cost), 2) AS cost,
       round(sum(kg) / 1e3, 3) AS carbon_t,
       round(sum(cost) / (sum(gpus * elapsed_s) / 3600), 4) AS cost_per_gpu_hour,
       arg_max(job_id, cost) AS costliest_job,
       round(max(cost), 2) AS costliest_job_cost,
       count(*) FILTER (WHERE is_measured) AS measured_jobs,
       round(sum(measured_kwh), 1) AS measured_kwh,
       round(sum(modelled_kwh), 1) AS modelled_kwh
FROM costed
GROUP BY team
ORDER BY sum(costed.cost) DESC, team
