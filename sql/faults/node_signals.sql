-- The evidence one ingest brings to node_risk (sql/dynamic/node_risk.sql), as rows of
-- node_signals: run in the ingest's transaction with $batch_id the ingest's batch
-- (warehouse/faults/signals.py). A piece already there (the same node, time, kind and detail:
-- a job or a Slurm drain seen again in a later capture) is not added twice.
INSERT INTO node_signals (node, gpu, signal_at, kind, detail, batch_id)
SELECT node, gpu, signal_at, kind, detail, $batch_id
FROM (
    -- faults and drains of node_faults
    SELECT node, NULL::INTEGER AS gpu, start_at AS signal_at,
           CASE WHEN class = 'slurm' THEN 'drain' ELSE 'fault' END AS kind,
           concat_ws(': ', class, description) AS detail
    FROM node_faults WHERE batch_id = $batch_id
    UNION ALL
    -- jobs that ended because a node failed: one piece per node of the job
    SELECT unnest(node_list), NULL, coalesce(end_at, start_at), 'node_fail', 'job ' || job_id
    FROM jobs
    WHERE batch_id = $batch_id AND state = 'NODE_FAIL' AND coalesce(end_at, start_at) IS NOT NULL
    UNION ALL
    -- what the telemetry showed: failures, and the precursors the field reports before them
    SELECT host, gpu, ts,
           CASE
               WHEN kind = 'xid' AND code IN (79, 119, 74) THEN 'gpu_failure'
               WHEN kind = 'ecc_dbe' THEN 'gpu_failure'
               WHEN kind = 'xid' AND code IN (48, 63, 64, 94, 95) THEN 'xid_precursor'
               WHEN kind = 'ecc_sbe' THEN 'sbe'
               WHEN kind IN ('row_remap', 'row_remap_uncorrectable') THEN 'row_remap'
               WHEN kind = 'nvlink_error' THEN 'nvlink'
               WHEN kind = 'pcie_replay' THEN 'pcie_replay'
               WHEN kind = 'thermal_throttle' THEN 'thermal'
           END,
           CASE WHEN code IS NOT NULL THEN 'XID ' || code || ': ' ELSE '' END || coalesce(detail, kind)
    FROM gpu_events
    WHERE batch_id = $batch_id AND host IS NOT NULL
        AND (kind IN ('ecc_dbe', 'ecc_sbe', 'row_remap', 'row_remap_uncorrectable',
                      'nvlink_error', 'pcie_replay', 'thermal_throttle')
             OR (kind = 'xid' AND code IN (79, 119, 74, 48, 63, 64, 94, 95)))
) AS found
WHERE node IS NOT NULL
    AND NOT EXISTS (
        SELECT 1 FROM node_signals s
        WHERE s.node = found.node AND s.signal_at = found.signal_at AND s.kind = found.kind
            AND s.detail IS NOT DISTINCT FROM found.detail AND s.batch_id < $batch_id
    );
