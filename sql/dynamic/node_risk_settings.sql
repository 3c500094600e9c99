-- node_risk_settings: risk_settings as one row of named columns, for node_risk to join.
CREATE DYNAMIC TABLE node_risk_settings WITH (freshness = 'downstream', refresh_mode = 'auto') AS
SELECT 'fleet' AS fleet,
       max(value) FILTER (WHERE name = 'prior_strength') AS prior_strength,
       max(value) FILTER (WHERE name = 'history_half_life_d') AS history_half_life_d,
       max(value) FILTER (WHERE name = 'precursor_half_life_d') AS precursor_half_life_d,
       max(value) FILTER (WHERE name = 'w_fault') AS w_fault,
       max(value) FILTER (WHERE name = 'w_drain') AS w_drain,
       max(value) FILTER (WHERE name = 'w_node_fail') AS w_node_fail,
       max(value) FILTER (WHERE name = 'w_gpu_failure') AS w_gpu_failure,
       max(value) FILTER (WHERE name = 'w_sbe') AS w_sbe,
       max(value) FILTER (WHERE name = 'w_row_remap') AS w_row_remap,
       max(value) FILTER (WHERE name = 'w_xid_precursor') AS w_xid_precursor,
       max(value) FILTER (WHERE name = 'w_nvlink') AS w_nvlink,
       max(value) FILTER (WHERE name = 'w_thermal') AS w_thermal,
       max(value) FILTER (WHERE name = 'w_pcie_replay') AS w_pcie_replay,
       max(value) FILTER (WHERE name = 'w_thermal_residual') AS w_thermal_residual,
       max(value) FILTER (WHERE name = 'growth_recent_h') AS growth_recent_h,
       max(value) FILTER (WHERE name = 'growth_trailing_d') AS growth_trailing_d,
       max(value) FILTER (WHERE name = 'growth_prior_events') AS growth_prior_events,
       -- the growth terms' windows: recent [0, growth_recent_s), trailing up to growth_window_s,
       -- and the share of the trailing window's count the recent one expects
       growth_recent_h * 3600 AS growth_recent_s,
       growth_recent_s + growth_trailing_d * 86400 AS growth_window_s,
       growth_recent_h / 24 / growth_trailing_d AS growth_share,
       max(value) FILTER (WHERE name = 'w_sbe_growth') AS w_sbe_growth,
       max(value) FILTER (WHERE name = 'w_nvlink_growth') AS w_nvlink_growth,
       max(value) FILTER (WHERE name = 'w_pcie_replay_growth') AS w_pcie_replay_growth,
       max(value) FILTER (WHERE name = 'watch_score') AS watch_score,
       max(value) FILTER (WHERE name = 'drain_score') AS drain_score,
       max(value) FILTER (WHERE name = 'fleet_nodes') AS fleet_nodes
FROM risk_settings
GROUP BY fleet
