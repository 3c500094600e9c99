-- The newest batch after batch {after} with an event that puts a GPU in `drain` or `replace` at
-- once (an XID whose first action is a reboot or a GPU reset, a double-bit ECC error, a row
-- remap that failed or was for an uncorrectable error; events_findings.sql maps them to rules),
-- or NULL. `wanka serve` refreshes health_findings at its next pass when there is one, instead of
-- when its freshness target comes: a GPU that fell off the bus shows `drain` within seconds.
SELECT max(e.batch_id)
FROM gpu_events e LEFT JOIN xid_codes c ON e.kind = 'xid' AND c.xid = e.code
WHERE e.batch_id > {after}
    AND (e.kind IN ('ecc_dbe', 'row_remap_failure', 'row_remap_uncorrectable')
         OR c.action IN ('drain_node', 'reset_gpu'))
