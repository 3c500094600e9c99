-- Health findings from gpu_windows (per GPU and 5-minute window means), two rules:
--   straggler        a GPU of a multi-GPU job whose SM activity sits below the job's own
--                    median: robust z-score below -3.5 and at least 7 % slower, `threshold`
--                    windows in a row (the `stragglers` analysis, on the windows). The z-score's
--                    spread is the job's own: 1.4826 × the MAD of every GPU's distance from its
--                    window's median over all the job's windows. A window's MAD of 4–8 peers is
--                    too noisy a yardstick: an inference pod whose replicas take uneven traffic
--                    would otherwise show a 'straggler' a few times a day at 10,000 GPUs, where a
--                    lock-step training job's GPUs stay within a few tenths of a percent. A
--                    window where a GPU ran no kernel (SM activity 0) is not judged: that GPU
--                    is idle, left unused by its job (idle_gpu_jobs' finding), not slow
--   thermal_outlier  a GPU at least `threshold` °C hotter than the same model at the same power
--                    (the model's temperature-on-power line in that window, plus the median
--                    residual), 2 windows in a row
-- A run of windows is one finding: flagged at the end of its `threshold`-th (2nd) window;
-- current while its last window ended less than `window_s` before the newest telemetry.
WITH now_ AS (
    SELECT max(ts_max) AS now FROM wanka.sample_batches
), rules AS (
    SELECT rule, threshold, to_seconds(window_s) AS span FROM wanka.health_rules
    WHERE rule IN ('straggler', 'thermal_outlier')
), attributed AS (  -- each window's GPUs with the job that held them then
    SELECT j.job_id, g.w, g.host, g.gpu, g.uuid, g.sm_active AS v
    FROM gpu_windows g
    JOIN job_gpus j ON j.host = g.host AND j.gpu = g.gpu
        AND g.w >= j.start_at AND (j.end_at IS NULL OR g.w < j.end_at)
    WHERE g.sm_active > 0  -- NULL: no profiling fields; 0: idle, not slow
), peers AS (
    SELECT *, median(v) OVER job_w AS med, count(*) OVER job_w AS peers
    FROM attributed WINDOW job_w AS (PARTITION BY job_id, w)
), spread AS (
    SELECT *, median(abs(v - med)) OVER (PARTITION BY job_id) AS mad FROM peers
    WHERE peers >= 4
), slow AS (
    SELECT 'straggler' AS rule, job_id, w, host, gpu, uuid,
           100 * (med - v) / med AS how_much, (v - med) / nullif(1.4826 * mad, 0) AS z
    FROM spread
    WHERE med > 0 AND 100 * (med - v) / med >= 7
        AND ((v - med) / nullif(1.4826 * mad, 0) < -3.5 OR (mad = 0 AND v < med))
), fit AS (  -- per model and window, temperature as a line in power
    SELECT model, w, regr_intercept(temp_c, power_w) AS a, regr_slope(temp_c, power_w) AS b,
           count(*) AS gpus
    FROM gpu_windows WHERE temp_c IS NOT NULL AND power_w IS NOT NULL
    GROUP BY ALL HAVING count(*) >= 8
), residual AS (
    SELECT g.w, g.host, g.gpu, g.uuid, g.model, g.temp_c, g.power_w,
           g.temp_c - (f.a + coalesce(f.b, 0) * g.power_w) AS r
    FROM gpu_windows g JOIN fit f USING (model, w)
), hot AS (
    SELECT 'thermal_outlier' AS rule, NULL AS job_id, x.w, x.host, x.gpu, x.uuid,
           x.r - median(x.r) OVER (PARTITION BY x.model, x.w) AS how_much, NULL::DOUBLE AS z
    FROM residual x
    QUALIFY x.r - median(x.r) OVER (PARTITION BY x.model, x.w)
        >= (SELECT threshold FROM rules WHERE rule = 'thermal_outlier')
), windows AS (
    SELECT *, CAST(epoch(w) / 300 AS BIGINT)
                  - row_number() OVER (PARTITION BY rule, job_id, host, gpu, uuid ORDER BY w) AS run
    FROM (SELECT * FROM slow UNION ALL SELECT * FROM hot)
), runs AS (
    SELECT rule, job_id, host, gpu, uuid, count(*) AS n, min(w) AS since,
           max(w) + INTERVAL 5 MINUTE AS until, median(how_much) AS how_much, median(z) AS z
    FROM windows GROUP BY rule, job_id, host, gpu, uuid, run
)
SELECT u.rule, u.host, u.gpu, u.uuid, u.n, u.since,
       u.since + to_seconds(300 * CASE u.rule WHEN 'straggler' THEN r.threshold ELSE 2 END)
           AS flagged_at,
       u.until, u.until > n.now - r.span AS current,
       [{'ts': u.since,
         'kind': u.rule,
         'code': NULL::INTEGER,
         'detail': CASE u.rule
             WHEN 'straggler' THEN printf('%.1f %% below the median SM activity of job %s (z %.1f), %d windows',
                                          u.how_much, u.job_id, u.z, u.n)
             ELSE printf('%.1f °C hotter than its model at the same power, %d windows',
                         u.how_much, u.n) END}] AS evidence
FROM runs u JOIN rules r USING (rule), now_ n
WHERE u.n >= CASE u.rule WHEN 'straggler' THEN r.threshold ELSE 2 END
