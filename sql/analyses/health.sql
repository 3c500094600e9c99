-- health: The GPUs and nodes to watch, drain or replace now: the rule that fired, since when, and its newest evidence.
--
-- The current findings of health_findings (sql/dynamic/health_findings.sql): the rules of
-- wanka.health_rules over gpu_events (XIDs by what NVIDIA says to do first, ECC errors, remapped
-- rows, throttling, NVLink), over the per-window means of gpu_windows (stragglers against their
-- job's peers, thermal outliers against the same model at the same power, silent GPUs and hosts)
-- and over nccl-tests probes (bus bandwidth below the fleet's median). Worst first; `wanka health`
-- and GET /v1/health give the same per GPU and node.
--
-- Parameters:
--   $state                VARCHAR = ''    only findings of this state (watch, drain, replace); '' for all
-- Columns:
--   state                 watch | drain | replace
--   host                  host
--   gpu                   GPU index on the host (NULL: the host's own finding)
--   rule                  the rule of wanka.health_rules that fired
--   evidence_rows         evidence behind it, count
--   flagged_at            when the rule first held
--   last_evidence         the newest evidence
--   evidence              the newest evidence row, as text
SELECT state, host, gpu, rule, n AS evidence_rows, flagged_at, until AS last_evidence,
       coalesce(CASE WHEN evidence[1].code IS NOT NULL THEN 'XID ' || evidence[1].code || ': ' END, '')
           || coalesce(evidence[1].detail, evidence[1].kind) AS evidence
FROM health_findings
WHERE current AND ($state = '' OR state = $state)
ORDER BY severity DESC, host, gpu NULLS FIRST, rule
