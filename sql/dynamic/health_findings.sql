-- health_findings: every finding of the rules of wanka.health_rules, past and current, with
-- its evidence (sql/health/findings.sql and the rule files it includes): what `wanka health`,
-- GET /v1/health and the cluster_health Grafana dashboard show.
-- Full plan: the rules compare GPUs with their peers in each window (medians, runs of windows),
-- which no refresh can fold row by row; their inputs are small and kept incrementally
-- (gpu_events at ingest, gpu_windows by its own refresh), so recomputing is cheap.
CREATE DYNAMIC TABLE health_findings WITH (freshness = '1 minute', refresh_mode = 'full') AS
@include(../health/findings.sql)
