-- node_risk: how likely each node is to fail soon, with its evidence (docs/faults.md).
--   history_ratio  empirical-Bayes rate ratio against the fleet: (α + H) / (α + E), where H is
--                  the node's faults, drains, NODE_FAIL jobs and failing XIDs, each weighted
--                  (risk_settings w_<kind>) and halved every history_half_life_d days before
--                  data_at, and E what a node at the fleet's own rate would have gathered over
--                  the same decay. 1 is an average node; α/(α + E) a node with no history.
--   precursor      the telemetry's warnings, weighted and halved every precursor_half_life_d
--                  days: rows remapped, XID 48/63/64/94/95, thermal slowdowns, thermal
--                  residuals persisting for days (sql/faults/thermal_residual.sql); corrected
--                  ECC errors, NVLink errors and PCIe replays too, but weighted 0 by default:
--                  they count by their growth.
--   <kind>_recent, <kind>_trailing  increases of corrected ECC errors (sbe), NVLink errors and
--                  PCIe replays in the last growth_recent_h hours, and in the growth_trailing_d
--                  days before them.
--   <kind>_growth  max(0, recent − expected) / (expected + growth_prior_events), expected being
--                  trailing × growth_share (the recent window's share of the trailing one):
--                  how far the node outruns its own rate; growth_prior_events keeps one count
--                  on a node with no history from being growth.
--   growth         Σ w_<kind>_growth × <kind>_growth.
--   score          history_ratio + precursor + growth; state 'drain' from drain_score, 'watch'
--                  from watch_score (rows of risk_settings), else 'ok'.
-- A node with no evidence at all has no row: its score is the prior, α / (α + E).
-- Groups plan: a new piece of evidence recomputes its node; a new data_at or an edited setting
-- (node_risk_fleet, node_risk_settings) recomputes every node, as every decay moved.
CREATE DYNAMIC TABLE node_risk WITH (freshness = '5 minutes', refresh_mode = 'auto') AS
SELECT s.node,
       (max(w.prior_strength) + sum(
            CASE s.kind WHEN 'fault' THEN w.w_fault WHEN 'drain' THEN w.w_drain
                        WHEN 'node_fail' THEN w.w_node_fail WHEN 'gpu_failure' THEN w.w_gpu_failure
                        ELSE 0 END
            * pow(0.5, epoch(f.data_at - s.signal_at) / 86400 / w.history_half_life_d)))
       / (max(w.prior_strength) + max(
            (f.faults * w.w_fault + f.drains * w.w_drain + f.node_fails * w.w_node_fail
             + f.gpu_failures * w.w_gpu_failure)
            / (CASE WHEN w.fleet_nodes > 0 THEN w.fleet_nodes ELSE f.nodes_seen END
               * greatest(epoch(f.data_at - f.since) / 86400, 1))
            * w.history_half_life_d / ln(2)
            * (1 - pow(0.5, greatest(epoch(f.data_at - f.since) / 86400, 1) / w.history_half_life_d))))
           AS history_ratio,
       sum(
            CASE s.kind WHEN 'sbe' THEN w.w_sbe WHEN 'row_remap' THEN w.w_row_remap
                        WHEN 'xid_precursor' THEN w.w_xid_precursor WHEN 'nvlink' THEN w.w_nvlink
                        WHEN 'thermal' THEN w.w_thermal
                        WHEN 'pcie_replay' THEN w.w_pcie_replay
                        WHEN 'thermal_residual' THEN w.w_thermal_residual ELSE 0 END
            * pow(0.5, epoch(f.data_at - s.signal_at) / 86400 / w.precursor_half_life_d))
           AS precursor,
       count(*) FILTER (WHERE s.kind = 'sbe' AND epoch(f.data_at - s.signal_at) < w.growth_recent_s)
           AS sbe_recent,
       count(*) FILTER (WHERE s.kind = 'sbe' AND epoch(f.data_at - s.signal_at) >= w.growth_recent_s
                        AND epoch(f.data_at - s.signal_at) < w.growth_window_s)
           AS sbe_trailing,
       greatest(0, sbe_recent - sbe_trailing * max(w.growth_share))
           / (sbe_trailing * max(w.growth_share)
              + max(w.growth_prior_events)) AS sbe_growth,
       count(*) FILTER (WHERE s.kind = 'nvlink' AND epoch(f.data_at - s.signal_at) < w.growth_recent_s)
           AS nvlink_recent,
       count(*) FILTER (WHERE s.kind = 'nvlink' AND epoch(f.data_at - s.signal_at) >= w.growth_recent_s
                        AND epoch(f.data_at - s.signal_at) < w.growth_window_s)
           AS nvlink_trailing,
       greatest(0, nvlink_recent - nvlink_trailing * max(w.growth_share))
           / (nvlink_trailing * max(w.growth_share)
              + max(w.growth_prior_events)) AS nvlink_growth,
       count(*) FILTER (WHERE s.kind = 'pcie_replay' AND epoch(f.data_at - s.signal_at) < w.growth_recent_s)
           AS pcie_replay_recent,
       count(*) FILTER (WHERE s.kind = 'pcie_replay' AND epoch(f.data_at - s.signal_at) >= w.growth_recent_s
                        AND epoch(f.data_at - s.signal_at) < w.growth_window_s)
           AS pcie_replay_trailing,
       greatest(0, pcie_replay_recent - pcie_replay_trailing * max(w.growth_share))
           / (pcie_replay_trailing * max(w.growth_share)
              + max(w.growth_prior_events)) AS pcie_replay_growth,
       sbe_growth * max(w.w_sbe_growth) + nvlink_growth * max(w.w_nvlink_growth)
           + pcie_replay_growth * max(w.w_pcie_replay_growth) AS growth,
       history_ratio + precursor + growth AS score,
       CASE WHEN score >= max(w.drain_score) THEN 'drain'
            WHEN score >= max(w.watch_score) THEN 'watch' ELSE 'ok' END AS state,
       count(*) FILTER (WHERE s.kind = 'fault') AS faults,
       count(*) FILTER (WHERE s.kind = 'drain') AS drains,
       count(*) FILTER (WHERE s.kind = 'node_fail') AS node_fails,
       count(*) FILTER (WHERE s.kind = 'gpu_failure') AS gpu_failures,
       count(*) FILTER (WHERE s.kind NOT IN ('fault', 'drain', 'node_fail', 'gpu_failure'))
           AS precursors,
       max(s.signal_at) AS last_signal_at,
       max(f.data_at) AS as_of
FROM node_signals s
JOIN node_risk_fleet f ON true
JOIN node_risk_settings w ON true
GROUP BY s.node
