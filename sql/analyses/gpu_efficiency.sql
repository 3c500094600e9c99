-- gpu_efficiency: GPU efficiency by user, account or partition: GPU-hours, utilisation, idle GPU-hours, energy and cost, ranked by idle GPU-hours.
--
-- From the shipped dynamic table job_gpu_usage_by_gpu (what each GPU of each job did, from the
-- telemetry attributed to it) and the job log for who ran it. Utilisation is the mean over the
-- GPUs, each weighted by its GPU-seconds. A GPU's idle time is the time its samples read below
-- 1 %, or all its time when its mean over the job is below the idle_gpu rule's threshold
-- (wanka.efficiency_rules), as in idle_gpu_jobs but without its minimum. Energy is the GPUs'
-- measured energy (where power or the energy counter was scraped); facility energy applies each
-- GPU's site PUE and cost its tariff, plus $price_per_gpu_hour for every GPU-hour. Rank 1 is the
-- most idle GPU-hours of its grouping (ties: the lower utilisation first). Telemetry names a pod
-- 'namespace/pod'; its job log row is the pod's under account = namespace.
--
-- Parameters:
--   $by                   VARCHAR = 'account'   only the rows grouped by 'user', 'account' or 'partition' ('' = all three, each ranked on its own)
--   $price_per_gpu_hour   DOUBLE = 0            what a GPU-hour costs besides its electricity (hardware, hosting), currency per GPU-h (0: electricity only)
-- Columns:
--   grouped_by            user, account or partition
--   name                  the user, account or partition ('(none)': the job log does not say)
--   jobs                  jobs with attributed telemetry, count
--   gpu_hours             GPU time the telemetry saw, GPU-h
--   util_pct              mean GPU utilisation, weighted by GPU-seconds, %
--   idle_gpu_hours        GPU time spent idle, GPU-h
--   idle_pct              idle_gpu_hours / gpu_hours, %
--   energy_kwh            measured GPU energy, kWh
--   facility_kwh          that energy at the sites' PUE, kWh
--   cost                  facility_kwh at the sites' tariffs + gpu_hours × $price_per_gpu_hour, currency (NULL: no energy measured)
--   rank                  1 = the most idle GPU-hours within its grouping
WITH chosen AS (
    SELECT d.grouped_by
    FROM (VALUES ('user'), ('account'), ('partition')) AS d(grouped_by)
    WHERE $by = '' OR d.grouped_by = $by
), idle_below AS (
    SELECT max(threshold) AS pct FROM wanka.efficiency_rules WHERE rule = 'idle_gpu'
), per_gpu AS (
    SELECT g.job_id, g.gpu_seconds, g.util_pct, g.energy_kwh,
           CASE WHEN g.util_pct < r.pct THEN g.gpu_seconds ELSE g.idle_gpu_seconds END AS idle_s,
           g.energy_kwh * s.pue AS facility_kwh,
           g.energy_kwh * s.pue * s.price_per_kwh AS energy_cost
    FROM job_gpu_usage_by_gpu AS g
    CROSS JOIN idle_below AS r
    LEFT JOIN nodes AS n ON n.host = g.host
    LEFT JOIN sites AS s ON s.site = n.site
), per_job AS (
    SELECT job_id,
           sum(gpu_seconds) AS gpu_s,
           sum(util_pct * gpu_seconds) AS util_gpu_s,
           sum(gpu_seconds) FILTER (WHERE util_pct IS NOT NULL) AS util_weight_s,
           sum(idle_s) AS idle_s,
           sum(energy_kwh) AS energy_kwh,
           sum(facility_kwh) AS facility_kwh,
           sum(energy_cost) AS energy_cost
    FROM per_gpu
    GROUP BY job_id
), logged AS (
    SELECT u.*,
           coalesce(j.user, p.user, '(none)') AS user,
           coalesce(j.account, p.account, '(none)') AS account,
           coalesce(j.partition, p.partition, '(none)') AS partition
    FROM per_job AS u
    LEFT JOIN jobs AS j ON j.job_id = u.job_id
    LEFT JOIN jobs AS p ON p.job_id = split_part(u.job_id, '/', 2)
                       AND p.account = split_part(u.job_id, '/', 1)
), grouped AS (
    SELECT c.grouped_by,
           CASE c.grouped_by WHEN 'user' THEN l.user WHEN 'account' THEN l.account
                ELSE l.partition END AS name,
           count(*) AS jobs,
           sum(l.gpu_s) / 3600 AS gpu_h,
           sum(l.util_gpu_s) / nullif(sum(l.util_weight_s), 0) AS util_pct,
           sum(l.idle_s) / 3600 AS idle_h,
           sum(l.energy_kwh) AS energy_kwh,
           sum(l.facility_kwh) AS facility_kwh,
           sum(l.energy_cost) + sum(l.gpu_s) / 3600 * $price_per_gpu_hour AS cost
    FROM logged AS l CROSS JOIN chosen AS c
    GROUP BY ALL
)
SELECT grouped_by, name, jobs,
       round(gpu_h, 3) AS gpu_hours,
       round(util_pct, 1) AS util_pct,
       round(idle_h, 3) AS idle_gpu_hours,
       round(100 * idle_h / nullif(gpu_h, 0), 1) AS idle_pct,
       round(energy_kwh, 3) AS energy_kwh,
       round(facility_kwh, 3) AS facility_kwh,
       round(cost, 4) AS cost,
       rank() OVER (PARTITION BY grouped_by ORDER BY idle_h DESC, util_pct ASC NULLS LAST) AS rank
FROM grouped
ORDER BY grouped_by, rank, name
