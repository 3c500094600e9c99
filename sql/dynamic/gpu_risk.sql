-- gpu_risk: the telemetry's warnings per GPU, where the evidence names one (node_signals.gpu:
-- XIDs, ECC and remapped rows, NVLink errors, thermal slowdowns, failing XIDs), weighted and
-- decayed as node_risk's precursor (risk_settings), as of the fleet's newest evidence.
-- Groups plan: as node_risk.
CREATE DYNAMIC TABLE gpu_risk WITH (freshness = '5 minutes', refresh_mode = 'auto') AS
SELECT s.node, s.gpu,
       sum(
            CASE s.kind WHEN 'sbe' THEN w.w_sbe WHEN 'row_remap' THEN w.w_row_remap
                        WHEN 'xid_precursor' THEN w.w_xid_precursor WHEN 'nvlink' THEN w.w_nvlink
                        WHEN 'thermal' THEN w.w_thermal ELSE 0 END
            * pow(0.5, epoch(f.data_at - s.signal_at) / 86400 / w.precursor_half_life_d))
           AS precursor,
       count(*) FILTER (WHERE s.kind = 'gpu_failure') AS gpu_failures,
       count(*) FILTER (WHERE s.kind <> 'gpu_failure') AS precursors,
       max(s.signal_at) AS last_signal_at,
       max(f.data_at) AS as_of
FROM node_signals s
JOIN node_risk_fleet f ON true
JOIN node_risk_settings w ON true
WHERE s.gpu IS NOT NULL
GROUP BY s.node, s.gpu
