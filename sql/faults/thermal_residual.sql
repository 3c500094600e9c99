-- Thermal residuals persisting for days, as node_signals of kind 'thermal_residual'
-- (warehouse/faults/thermal.py runs this after each fold of the hourly tier, for the whole UTC
-- days [$lo, $hi) not yet derived; `hours` reads the hourly tier's rows of temperature and
-- power in those days and the days before them, its compressed blocks outside that span not
-- decoded).
--
-- Per GPU and hour, the mean temperature and power; per model and day, temperature as a line in
-- power over the fleet's GPU-hours (what the health rule thermal_outlier does per 5-minute
-- window); a GPU-day's residual is the mean of its hours' distance from that line, less the
-- median residual of its model that day (the line's own bias). A GPU-day at or above
-- thermal_residual_c that ends a run of thermal_residual_days such days in a row is one piece of
-- evidence, dated at the end of the day.
INSERT INTO node_signals (node, gpu, signal_at, kind, detail, batch_id)
WITH hours AS (
    SELECT r.host, r.gpu, coalesce(r.model, '') AS model, t.bucket,
           time_bucket(INTERVAL 1 DAY, t.bucket) AS day,
           sum(t.value_sum) FILTER (WHERE r.metric = 'DCGM_FI_DEV_GPU_TEMP')
               / sum(t.samples) FILTER (WHERE r.metric = 'DCGM_FI_DEV_GPU_TEMP') AS temp_c,
           sum(t.value_sum) FILTER (WHERE r.metric = 'DCGM_FI_DEV_POWER_USAGE')
               / sum(t.samples) FILTER (WHERE r.metric = 'DCGM_FI_DEV_POWER_USAGE') AS power_w
    FROM {hours} t JOIN wanka.gpu_series r USING (series_id)
    WHERE r.metric IN ('DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE')
        AND r.host IS NOT NULL AND r.gpu IS NOT NULL
        AND t.bucket >= $lo - to_days(CAST($days AS INTEGER) - 1) AND t.bucket < $hi
    GROUP BY ALL
), usable AS (
    SELECT * FROM hours WHERE isfinite(temp_c) AND isfinite(power_w)
), fit AS (  -- per model and day, temperature as a line in power
    SELECT model, day, regr_intercept(temp_c, power_w) AS a, regr_slope(temp_c, power_w) AS b
    FROM usable GROUP BY ALL HAVING count(DISTINCT (host, gpu)) >= 8
), gpu_days AS (
    SELECT u.host, u.gpu, u.model, u.day,
           avg(u.temp_c - (f.a + coalesce(f.b, 0) * u.power_w)) AS r
    FROM usable u JOIN fit f USING (model, day)
    GROUP BY ALL
), residual AS (
    SELECT host, gpu, day, r - median(r) OVER (PARTITION BY model, day) AS residual_c
    FROM gpu_days
), hot AS (
    SELECT * FROM residual WHERE residual_c >= $threshold_c
), runs AS (  -- each hot day with the hot days of the same GPU in the N days up to it
    SELECT d.host, d.gpu, d.day, d.residual_c, count(*) AS hot_days, min(e.residual_c) AS least_c
    FROM hot d JOIN hot e ON e.host = d.host AND e.gpu = d.gpu
        AND e.day > d.day - to_days(CAST($days AS INTEGER)) AND e.day <= d.day
    WHERE d.day >= $lo
    GROUP BY ALL
)
SELECT host, gpu, day + INTERVAL 1 DAY, 'thermal_residual',
       printf('%.1f °C above what its power predicts (at least %.1f °C each of the last %d days)',
              residual_c, least_c, hot_days),
       $batch_id
FROM runs
WHERE hot_days >= CAST($days AS INTEGER)
