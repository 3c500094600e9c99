-- Whether some GPU and field of the batches' samples of event fields ({fresh}:
-- gpu_event_samples.sql) has no sample in wanka.gpu_event_state at or before its first one (a
-- first batch, late data): gpu_events.sql then looks for the sample before in the stored samples.
SELECT EXISTS (
    SELECT 1 FROM (SELECT host, gpu, uuid, metric, min(ts) AS lo FROM {fresh} GROUP BY ALL) b
    WHERE NOT EXISTS (
        SELECT 1 FROM wanka.gpu_event_state k
        WHERE k.host = b.host AND k.gpu = b.gpu AND k.uuid = b.uuid AND k.metric = b.metric
            AND k.ts <= b.lo)
)
