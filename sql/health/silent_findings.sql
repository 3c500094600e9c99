-- Health findings for silence, from gpu_windows:
--   silent_host  a host none of whose GPUs sent a sample for at least `threshold` seconds while
--                the rest of the fleet kept reporting (the scheduler may still count it up)
--   silent       one GPU silent that long while another GPU of its host still reports
-- A gap between two windows a host (GPU) reported in, or from its last sample to the newest
-- telemetry, is one finding: flagged `threshold` seconds after its last sample; current while
-- the gap is open. Only gaps that began in the last day count, and not those of a node the
-- scheduler has down or drained (`nodes.state`): silence is the rule for them.
WITH now_ AS (
    SELECT max(ts_max) AS now FROM wanka.sample_batches
), rules AS (
    SELECT rule, state, threshold FROM wanka.health_rules WHERE rule IN ('silent_host', 'silent')
), hosts AS (
    SELECT host, w, min(first_ts) AS first_ts, max(last_ts) AS last_ts FROM gpu_windows
    WHERE host NOT IN (SELECT host FROM nodes WHERE state IN ('down', 'drain'))
    GROUP BY ALL
), host_gaps AS (
    SELECT host, last_ts, lead(first_ts) OVER (PARTITION BY host ORDER BY w) AS back FROM hosts
), gpus AS (
    SELECT host, gpu, uuid, w, last_ts,
           lead(first_ts) OVER (PARTITION BY host, gpu, uuid ORDER BY w) AS back
    FROM gpu_windows
    WHERE host NOT IN (SELECT host FROM nodes WHERE state IN ('down', 'drain'))
), gaps AS (
    SELECT 'silent_host' AS rule, host, NULL::INTEGER AS gpu, NULL::VARCHAR AS uuid, last_ts,
           back FROM host_gaps
    UNION ALL
    SELECT 'silent', g.host, g.gpu, g.uuid, g.last_ts, g.back FROM gpus g
    WHERE EXISTS (  -- another GPU of the host reported during the gap
        SELECT 1 FROM hosts h WHERE h.host = g.host AND h.last_ts > g.last_ts
            AND (g.back IS NULL OR h.first_ts < g.back)
            AND h.last_ts >= g.last_ts + to_seconds((SELECT threshold FROM rules WHERE rule = 'silent')))
)
SELECT x.rule, x.host, x.gpu, x.uuid, 1 AS n, x.last_ts AS since,
       x.last_ts + to_seconds(r.threshold) AS flagged_at,
       coalesce(x.back, n.now) AS until, x.back IS NULL AS current,
       [{'ts': x.last_ts, 'kind': 'last_sample', 'code': NULL::INTEGER,
         'detail': CASE WHEN x.back IS NULL
             THEN printf('silent for %d s', CAST(epoch(n.now - x.last_ts) AS BIGINT))
             ELSE printf('silent for %d s, back at %s', CAST(epoch(x.back - x.last_ts) AS BIGINT),
                         strftime(x.back, '%Y-%m-%d %H:%M')) END}] AS evidence
FROM gaps x JOIN rules r USING (rule), now_ n
WHERE coalesce(x.back, n.now) >= x.last_ts + to_seconds(r.threshold)
    AND n.now >= x.last_ts + to_seconds(r.threshold) AND x.last_ts > n.now - INTERVAL 1 DAY
