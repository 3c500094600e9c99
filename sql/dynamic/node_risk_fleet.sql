-- node_risk_fleet: one row — the fleet's evidence so far, which node_risk compares each node
-- with: when it starts and ends (data_at is the time node_risk's scores are as of: the newest
-- evidence, not the wall clock, so a warehouse loaded from files reads as it did then), the
-- nodes seen, and the pieces of history (faults, drains, NODE_FAIL jobs, failing XIDs) by kind.
-- Groups plan: count(DISTINCT node) is recomputed for its one group when node_signals changes.
CREATE DYNAMIC TABLE node_risk_fleet WITH (freshness = 'downstream', refresh_mode = 'auto') AS
SELECT 'fleet' AS fleet,
       min(signal_at) AS since,
       max(signal_at) AS data_at,
       count(DISTINCT node) AS nodes_seen,
       count(*) FILTER (WHERE kind = 'fault') AS faults,
       count(*) FILTER (WHERE kind = 'drain') AS drains,
       count(*) FILTER (WHERE kind = 'node_fail') AS node_fails,
       count(*) FILTER (WHERE kind = 'gpu_failure') AS gpu_failures
FROM node_signals
GROUP BY fleet
