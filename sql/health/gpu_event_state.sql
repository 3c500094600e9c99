-- wanka.gpu_event_state after the batches {batches}: each GPU and event field's newest sample
-- (what gpu_events.sql compares the next batch's first sample with). NaN values are kept: a
-- NaN after a code is no sample of the code.
-- The batches' samples of event fields are in {fresh} (gpu_event_samples.sql).
INSERT INTO wanka.gpu_event_state BY NAME
SELECT host, gpu, uuid, metric, max(ts) AS ts, arg_max(value, ts) AS value
FROM {fresh}
GROUP BY ALL
ON CONFLICT (host, gpu, uuid, metric) DO UPDATE SET ts = excluded.ts, value = excluded.value
    WHERE excluded.ts >= gpu_event_state.ts
