-- idle_gpu_jobs: Jobs that left GPUs idle (at 0 %) for at least $idle_minutes, ranked by idle GPU-hours, with what it wasted.
--
-- From the shipped dynamic table job_gpu_usage_by_gpu (what each GPU a job held did, from the
-- telemetry attributed to the job: it ran, and is running or finished). A GPU of a job sat idle
-- for the time its utilisation samples read below 1 % (idle_gpu_seconds; 1 % is the idle_gpu
-- rule's shipped threshold), or for all its time when its mean utilisation over the job is below
-- the idle_gpu rule's threshold in wanka.efficiency_rules (what `wanka jobstats` reports as "did
-- not use N of M GPUs"). It is an idle GPU when that time reaches $idle_minutes; a job with at
-- least one is listed, unless it ran less than the idle_minutes rule's min_elapsed_s.
-- The waste: the idle GPUs' idle GPU-hours at $price_per_gpu_hour, plus the energy they drew
-- while idle — the idle share of each one's measured energy (an upper bound: an idle GPU draws
-- less than a busy one), at its site's PUE and tariff. Telemetry names a pod 'namespace/pod';
-- its job log row is the pod's under account = namespace.
--
-- Parameters:
--   $idle_minutes         DOUBLE = -1   a GPU idle at least this long counts, minutes (negative: the idle_minutes rule, 30 as shipped)
--   $price_per_gpu_hour   DOUBLE = 0    what a GPU-hour costs besides its electricity (hardware, hosting), currency per GPU-h (0: electricity only)
-- Columns:
--   job_id                job (a pod: namespace/pod)
--   user                  user
--   account               account
--   partition             partition
--   state                 job state (NULL: not in the job log)
--   gpus_seen             GPUs (or MIG instances) with attributed samples, count
--   idle_gpus             of those, idle for at least $idle_minutes, count
--   idle_gpu_hours        the idle GPUs' idle time, GPU-h
--   gpu_hours             all the job's GPU time the telemetry saw, GPU-h
--   idle_pct              idle_gpu_hours / gpu_hours, %
--   wasted_kwh            facility energy of the idle GPUs while idle (GPU energy × PUE), kWh (NULL: not measured)
--   wasted_cost           wasted_kwh at the sites' tariffs + idle_gpu_hours × $price_per_gpu_hour, currency (NULL: energy not measured)
WITH rule AS (
    SELECT max(threshold) FILTER (WHERE rule = 'idle_gpu') AS idle_below_pct,
           60 * CASE WHEN $idle_minutes < 0
                     THEN max(threshold) FILTER (WHERE rule = 'idle_minutes')
                     ELSE $idle_minutes END AS idle_for_s,
           coalesce(max(min_elapsed_s) FILTER (WHERE rule = 'idle_minutes'), 0) AS min_elapsed_s
    FROM wanka.efficiency_rules
), per_gpu AS (
    SELECT g.job_id, g.gpu_seconds, g.energy_kwh, s.pue, s.price_per_kwh, r.idle_for_s,
           CASE WHEN g.util_pct < r.idle_below_pct THEN g.gpu_seconds
                ELSE g.idle_gpu_seconds END AS idle_s
    FROM job_gpu_usage_by_gpu AS g
    CROSS JOIN rule AS r
    LEFT JOIN nodes AS n ON n.host = g.host
    LEFT JOIN sites AS s ON s.site = n.site
), flagged AS (
    SELECT *, idle_s > 0 AND idle_s >= idle_for_s AS idle,
           energy_kwh * idle_s / nullif(gpu_seconds, 0) * pue AS idle_kwh
    FROM per_gpu
), per_job AS (
    SELECT job_id,
           count(*) AS gpus_seen,
           count(*) FILTER (WHERE idle) AS idle_gpus,
           sum(idle_s) FILTER (WHERE idle) / 3600 AS idle_h,
           sum(gpu_seconds) / 3600 AS gpu_h,
           CASE WHEN count(idle_kwh) FILTER (WHERE idle) = count(*) FILTER (WHERE idle)
                THEN sum(idle_kwh) FILTER (WHERE idle) END AS idle_kwh,
           CASE WHEN count(idle_kwh * price_per_kwh) FILTER (WHERE idle) = count(*) FILTER (WHERE idle)
                THEN sum(idle_kwh * price_per_kwh) FILTER (WHERE idle) END AS idle_energy_cost
    FROM flagged
    GROUP BY job_id
    HAVING count(*) FILTER (WHERE idle) > 0
), logged AS (
    SELECT u.*,
           coalesce(j.user, p.user) AS user,
           coalesce(j.account, p.account) AS account,
           coalesce(j.partition, p.partition) AS partition,
           coalesce(j.state, p.state) AS state,
           coalesce(j.elapsed_s, p.elapsed_s) AS elapsed_s
    FROM per_job AS u
    LEFT JOIN jobs AS j ON j.job_id = u.job_id
    LEFT JOIN jobs AS p ON p.job_id = split_part(u.job_id, '/', 2)
                       AND p.account = split_part(u.job_id, '/', 1)
)
SELECT l.job_id, l.user, l.account, l.partition, l.state,
       l.gpus_seen, l.idle_gpus,
       round(l.idle_h, 3) AS idle_gpu_hours,
       round(l.gpu_h, 3) AS gpu_hours,
       round(100 * l.idle_h / nullif(l.gpu_h, 0), 1) AS idle_pct,
       round(l.idle_kwh, 3) AS wasted_kwh,
       round(l.idle_energy_cost + l.idle_h * $price_per_gpu_hour, 4) AS wasted_cost
FROM logged AS l CROSS JOIN rule AS r
WHERE coalesce(l.elapsed_s, 3600 * l.gpu_h / l.gpus_seen) >= r.min_elapsed_s
ORDER BY l.idle_h DESC, l.job_id
