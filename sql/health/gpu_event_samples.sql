-- The samples of event fields (wanka.gpu_event_fields) that the batches {batches} hold, each with
-- its GPU (host, gpu, uuid; -1 and '' where the series has none) and field: what gpu_events.sql,
-- gpu_silence.sql and gpu_event_state.sql read, made once per batch into a temporary table.
-- {series} is where the batches' series are found: the series dictionary, or for remote_write
-- and scrape rounds the batch's own series (the dictionary, ~1M series a day at 10,000 GPUs,
-- would otherwise be scanned at every request).
SELECT r.host, coalesce(r.gpu, -1) AS gpu, coalesce(r.uuid, '') AS uuid, r.metric,
       s.ts, s.value, s.batch_id
FROM wanka.gpu_samples s JOIN {series} r USING (series_id)
WHERE s.batch_id IN ({batches}) AND r.metric IN (SELECT metric FROM wanka.gpu_event_fields)
