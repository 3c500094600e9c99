-- gpu_risk: the telemetry's warnings per GPU, where the evidence names one (node_signals.gpu:
-- XIDs, ECC and remapped rows, NVLink errors, PCIe replays, thermal slowdowns and residuals,
-- failing XIDs), weighted and decayed as node_risk's precursor, and the growth of corrected ECC
-- errors, NVLink errors and PCIe replays against the GPU's own history as node_risk's growth
-- (risk_settings); score = precursor + growth, as of the fleet's newest evidence.
-- Groups plan: as node_risk.
CREATE DYNAMIC TABLE gpu_risk WITH (freshness = '5 minutes', refresh_mode = 'auto') AS
SELECT s.node, s.gpu,
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
       precursor + growth AS score,
       count(*) FILTER (WHERE s.kind = 'gpu_failure') AS gpu_failures,
       count(*) FILTER (WHERE s.kind <> 'gpu_failure') AS precursors,
       max(s.signal_at) AS last_signal_at,
       max(f.data_at) AS as_of
FROM node_signals s
JOIN node_risk_fleet f ON true
JOIN node_risk_settings w ON true
WHERE s.gpu IS NOT NULL
GROUP BY s.node, s.gpu
