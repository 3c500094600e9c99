-- wanka.gpu_event_state after the batches {batches}: each GPU and event field's newest sample
-- (what gpu_events.sql compares the next batch's first sample with). NaN values are kept: a
-- NaN after a code is no sample of the code.
-- The batches' samples of event fields are in {fresh} (gpu_event_samples.sql), reduced here to
-- one row per GPU and field, since MERGE INTO does not refuse two source rows for one target.
-- The table has no key (schema step 28): ingest is the one writer that moves it on.
MERGE INTO wanka.gpu_event_state AS k
USING (
    SELECT host, gpu, uuid, metric, max(ts) AS ts, arg_max(value, ts) AS value
    FROM {fresh}
    GROUP BY ALL
) AS n
ON k.host = n.host AND k.gpu = n.gpu AND k.uuid = n.uuid AND k.metric = n.metric
WHEN MATCHED AND n.ts >= k.ts THEN UPDATE SET ts = n.ts, value = n.value
WHEN NOT MATCHED THEN INSERT (host, gpu, uuid, metric, ts, value)
    VALUES (n.host, n.gpu, n.uuid, n.metric, n.ts, n.value)
