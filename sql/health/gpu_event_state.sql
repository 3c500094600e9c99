-- wanka.gpu_event_state after the batches {batches}: each GPU and event field's newest sample
-- (what gpu_events.sql compares the next batch's first sample with). NaN values are kept: a
-- NaN after a code is no sample of the code.
INSERT INTO wanka.gpu_event_state BY NAME
SELECT x.host, coalesce(x.gpu, -1) AS gpu, coalesce(x.uuid, '') AS uuid, x.metric,
       max(s.ts) AS ts, arg_max(s.value, s.ts) AS value
FROM wanka.gpu_samples s
JOIN (SELECT series_id, host, gpu, uuid, metric FROM wanka.gpu_series
      WHERE metric IN (SELECT metric FROM wanka.gpu_event_fields)) x USING (series_id)
WHERE s.batch_id IN ({batches})
GROUP BY ALL
ON CONFLICT (host, gpu, uuid, metric) DO UPDATE SET ts = excluded.ts, value = excluded.value
    WHERE excluded.ts >= gpu_event_state.ts
