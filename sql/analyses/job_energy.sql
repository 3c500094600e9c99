-- job_energy: Energy, cost and carbon of each job, from its GPUs' measured energy at the site's PUE, tariff and grid intensity.
--
-- A job's GPU energy is what the telemetry attributed to it measured (job_gpu_usage.energy_kwh:
-- the GPUs' energy counter where it was scraped, else mean power × time, summed over its GPUs).
-- Each GPU's energy is taken to its facility through the site of the node it is on
-- (nodes.site → sites.pue), priced at that site's tariff (sites.price_per_kwh) and turned into
-- emissions at its grid intensity (sites.grid_g_per_kwh, carbon_kg()). GPUs only: CPUs, memory
-- and network draw more. Jobs whose telemetry measured no energy are left out; a job on a node
-- the inventory does not place has no facility figures. Telemetry names a pod 'namespace/pod';
-- its job log row is the pod's under account = namespace.
--
-- Parameters:
--   $account              VARCHAR = ''   only this account ('' = every account)
-- Columns:
--   job_id                job (a pod: namespace/pod)
--   user                  user
--   account               account
--   partition             partition
--   state                 job state (NULL: not in the job log)
--   site                  the site of its GPUs (several: comma-separated)
--   gpus_seen             GPUs (or MIG instances) with attributed samples, count
--   gpu_hours             GPU time the telemetry saw, GPU-h
--   gpu_kwh               measured GPU energy, kWh
--   pue                   facility_kwh / gpu_kwh: the site's power usage effectiveness, ratio
--   facility_kwh          GPU energy × its site's PUE, kWh
--   cost                  facility_kwh at the site's tariff, currency
--   carbon_kg             facility_kwh at the site's grid intensity, kg CO2e
WITH per_gpu AS (
    SELECT g.job_id, g.gpu_seconds, g.energy_kwh, n.site,
           g.energy_kwh * s.pue AS facility_kwh,
           g.energy_kwh * s.pue * s.price_per_kwh AS cost,
           carbon_kg(g.energy_kwh * s.pue, s.grid_g_per_kwh) AS carbon_kg
    FROM job_gpu_usage_by_gpu AS g
    LEFT JOIN nodes AS n ON n.host = g.host
    LEFT JOIN sites AS s ON s.site = n.site
), per_job AS (
    SELECT job_id,
           string_agg(DISTINCT site, ',' ORDER BY site) AS site,
           count(*) AS gpus_seen,
           sum(gpu_seconds) / 3600 AS gpu_h,
           sum(energy_kwh) AS gpu_kwh,
           -- a GPU with measured energy but no site leaves the job's facility figures unknown
           CASE WHEN count(facility_kwh) = count(energy_kwh) THEN sum(facility_kwh) END AS facility_kwh,
           CASE WHEN count(cost) = count(energy_kwh) THEN sum(cost) END AS cost,
           CASE WHEN count(carbon_kg) = count(energy_kwh) THEN sum(carbon_kg) END AS carbon_kg
    FROM per_gpu
    GROUP BY job_id
    HAVING count(energy_kwh) > 0
), logged AS (
    SELECT u.*,
           coalesce(j.user, p.user) AS user,
           coalesce(j.account, p.account) AS account,
           coalesce(j.partition, p.partition) AS partition,
           coalesce(j.state, p.state) AS state
    FROM per_job AS u
    LEFT JOIN jobs AS j ON j.job_id = u.job_id
    LEFT JOIN jobs AS p ON p.job_id = split_part(u.job_id, '/', 2)
                       AND p.account = split_part(u.job_id, '/', 1)
)
SELECT job_id, user, account, partition, state, site, gpus_seen,
       round(gpu_h, 3) AS gpu_hours,
       round(gpu_kwh, 3) AS gpu_kwh,
       round(facility_kwh / nullif(gpu_kwh, 0), 3) AS pue,
       round(facility_kwh, 3) AS facility_kwh,
       round(cost, 4) AS cost,
       round(carbon_kg, 3) AS carbon_kg
FROM logged
WHERE $account = '' OR account = $account
ORDER BY facility_kwh DESC NULLS LAST, gpu_kwh DESC, job_id
