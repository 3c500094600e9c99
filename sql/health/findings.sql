-- Every finding of every rule of wanka.health_rules, from the rule files of sql/health/ it
-- includes: rule, its state, host, gpu and uuid (NULL for a host's finding), n (the
-- evidence), since (the first evidence), flagged_at (when the rule first held), until (the last
-- evidence), current (whether it holds as of the newest telemetry) and the evidence rows.
-- The dynamic table health_findings (sql/dynamic/health_findings.sql) holds it; `wanka health`
-- shows the current ones; the rest is the history a fault's detection is measured on
-- (bench/bench_health.py).
WITH now_ AS (
    SELECT max(ts_max) AS now FROM wanka.sample_batches
), nccl AS (  -- a host's low sweeps are one finding
    SELECT 'nccl_busbw' AS rule, f.host, NULL::INTEGER AS gpu, NULL::VARCHAR AS uuid,
           CAST(sum(f.low_runs) AS BIGINT) AS n, min(f.ran_at) AS since,
           min(f.ran_at) AS flagged_at, max(f.ran_at) AS until,
           max(f.ran_at) > any_value(n.now) - to_seconds(any_value(r.window_s)) AS current,
           flatten(list(f.evidence ORDER BY f.ran_at DESC))[1:5] AS evidence
    FROM (@include(nccl_findings.sql)) f, now_ n, wanka.health_rules r
    WHERE r.rule = 'nccl_busbw'
    GROUP BY f.host
), found AS (
    SELECT * FROM (@include(events_findings.sql))
    UNION ALL BY NAME SELECT * FROM (@include(window_findings.sql))
    UNION ALL BY NAME SELECT * FROM (@include(silent_findings.sql))
    UNION ALL BY NAME SELECT * FROM (@include(counter_findings.sql))
    UNION ALL BY NAME SELECT * FROM nccl
)
SELECT f.rule, r.state, f.host, f.gpu, f.uuid, f.n, f.since, f.flagged_at, f.until, f.current,
       f.evidence, CASE r.state WHEN 'replace' THEN 3 WHEN 'drain' THEN 2 ELSE 1 END AS severity
FROM found f JOIN wanka.health_rules r USING (rule)
ORDER BY severity DESC, f.host, f.gpu NULLS FIRST, f.rule
