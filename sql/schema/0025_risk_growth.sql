-- Risk from growth against a GPU's own history (sql/dynamic/node_risk.sql, gpu_risk.sql;
-- docs/faults.md).
--
-- PCIe replays: dcgm-exporter's DCGM_FI_DEV_PCIE_REPLAY_COUNTER (a counter in its default
-- field list) becomes an event field, so an increase is a gpu_events row of kind
-- 'pcie_replay' and a node_signals piece of kind 'pcie_replay'.
INSERT INTO wanka.gpu_event_fields VALUES ('DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'pcie_replay');

-- Corrected ECC errors, NVLink errors and PCIe replays count by their growth: the increases of
-- the last growth_recent_h hours against what the previous growth_trailing_d days' rate
-- predicts for as long, max(0, recent − expected) / (expected + growth_prior_events), times
-- w_<kind>_growth. A GPU that always has some is not flagged for having them, and
-- growth_prior_events keeps a GPU with no history from being flagged by one count. Their
-- decayed counts (w_sbe, w_nvlink, w_pcie_replay) are 0 unless an admin wants them back.
UPDATE risk_settings SET value = 0,
    description = 'weight of one increase of corrected ECC errors, decayed (0: only its growth counts)'
WHERE name = 'w_sbe';
UPDATE risk_settings SET value = 0,
    description = 'weight of one increase of NVLink errors, decayed (0: only its growth counts)'
WHERE name = 'w_nvlink';
INSERT INTO risk_settings (name, value, description) VALUES
    ('w_pcie_replay', 0, 'weight of one increase of PCIe replays, decayed (0: only its growth counts)'),
    ('growth_recent_h', 24, 'hours of recent increases a growth term counts'),
    ('growth_trailing_d', 14, 'days before those that give the GPU''s own rate'),
    ('growth_prior_events', 5, 'pseudo-increases added to the expected: one count alone is no growth'),
    ('w_sbe_growth', 0.1, 'weight of growth of corrected (single-bit) ECC errors'),
    ('w_nvlink_growth', 0.2, 'weight of growth of NVLink CRC/replay/recovery errors'),
    ('w_pcie_replay_growth', 0.2, 'weight of growth of PCIe replays');


-- Thermal residuals persisting for days (sql/faults/thermal_residual.sql): a GPU at least
-- thermal_residual_c hotter than its model at the same power, day after day, for
-- thermal_residual_days days in a row, is a node_signals piece of kind 'thermal_residual' each
-- such day, weighted w_thermal_residual and decayed as the other precursors.
INSERT INTO risk_settings (name, value, description) VALUES
    ('thermal_residual_c', 5, 'a GPU-day this many degrees C above what its power predicts is hot'),
    ('thermal_residual_days', 3, 'hot days in a row that make a thermal residual evidence'),
    ('w_thermal_residual', 0.5, 'weight of one day of a persisting thermal residual');
