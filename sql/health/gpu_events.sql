-- gpu_events of one ingest: the events the samples of the batches {batches} show, each against
-- the sample of the same GPU and field just before it (which may be in an earlier batch).
--
-- dcgm-exporter reports gauges and counters, not events: an XID is the last code a GPU reported
-- (a new event is a change of the value to a non-zero code, or the same code again after a gap
-- of more than {repeat_gap_s} s without it); ECC, remapped rows and NVLink errors are counters (an
-- event is an increase); a remap failure is a flag going to 1; throttling is a bitmask of clock
-- event reasons (an event is a reason bit that turns on: thermal 0x8 HW slowdown, 0x20 SW
-- thermal, 0x40 HW thermal; power 0x4 SW power cap, 0x80 HW power brake). Samples are matched
-- by GPU (host, gpu, uuid) and field, not by series, as a GPU's series change with its job labels;
-- a sample more than {lookback_s} s before is not taken as the one before.
--
-- The sample before a batch is wanka.gpu_event_state's (the newest of each GPU and field, kept
-- by gpu_event_state.sql), so an ingest reads its own samples only; where the state has none
-- at or before the batch's first sample (a first batch, late data) the stored samples are read:
-- {scan} is whether that is so for some GPU and field (gpu_event_unknown.sql), as the series
-- dictionary is scanned then. The batches' samples of event fields, with their GPU, are in
-- {fresh} (gpu_event_samples.sql).
WITH fields AS (
    SELECT metric, kind FROM wanka.gpu_event_fields
), series AS (  -- every series of an event field: read only where the state has no sample
    SELECT r.series_id, r.host, coalesce(r.gpu, -1) AS gpu, coalesce(r.uuid, '') AS uuid, r.metric
    FROM wanka.gpu_series r JOIN fields f USING (metric)
    WHERE {scan}
), fresh AS (
    SELECT * FROM {fresh}
), since AS (
    SELECT host, gpu, uuid, metric, min(ts) AS lo, count(*) AS n FROM fresh GROUP BY ALL
), kept AS (  -- the state's sample, where it is at or before the batch's first
    SELECT k.host, k.gpu, k.uuid, k.metric, k.ts, k.value, NULL::BIGINT AS batch_id
    FROM wanka.gpu_event_state k JOIN since b USING (host, gpu, uuid, metric)
    WHERE k.ts <= b.lo
), missing AS (
    SELECT b.* FROM since b ANTI JOIN kept k USING (host, gpu, uuid, metric)
), scanned AS (  -- else the last stored sample up to the batch's first (a copy of a sample at
    -- the same time, of the GPU's other job, may be in an earlier batch)
    SELECT x.host, x.gpu, x.uuid, x.metric,
           max(s.ts) AS ts, arg_max(s.value, s.ts) AS value, NULL::BIGINT AS batch_id
    FROM wanka.gpu_samples s JOIN series x USING (series_id)
    JOIN missing b USING (host, gpu, uuid, metric)
    WHERE s.ts <= b.lo AND s.ts >= b.lo - INTERVAL '{lookback_s} seconds'
        AND s.batch_id NOT IN ({batches})
    GROUP BY ALL
), before AS (
    SELECT * FROM kept UNION ALL SELECT * FROM scanned
), steps AS (  -- each fresh sample with the one before: a join where a key has one sample in
    -- the batch (a scrape), the window where it has more
    SELECT f.*, b.value AS prev, b.ts AS prev_ts
    FROM fresh f JOIN since s USING (host, gpu, uuid, metric)
    LEFT JOIN before b USING (host, gpu, uuid, metric)
    WHERE s.n = 1
    UNION ALL
    SELECT * FROM (
        SELECT *, lag(value) OVER w AS prev, lag(ts) OVER w AS prev_ts
        FROM (SELECT * FROM fresh UNION ALL SELECT * FROM before) x
        SEMI JOIN (SELECT * FROM since WHERE n > 1) s USING (host, gpu, uuid, metric)
        WINDOW w AS (PARTITION BY host, gpu, uuid, metric ORDER BY ts, batch_id NULLS FIRST)
    ) WHERE batch_id IS NOT NULL
), near AS (  -- a sample longer ago than the look-back is no sample before
    SELECT * REPLACE (CASE WHEN ts - prev_ts <= INTERVAL '{lookback_s} seconds' THEN prev END
                      AS prev)
    FROM steps
), found AS (
    SELECT n.ts, n.host, n.gpu, n.uuid, n.metric, n.value, n.prev, n.batch_id,
        CASE f.kind
            WHEN 'xid' THEN CASE WHEN value > 0 AND (prev IS DISTINCT FROM value
                OR ts - prev_ts > INTERVAL '{repeat_gap_s} seconds') THEN 'xid' END
            WHEN 'row_remap_failure' THEN CASE WHEN value > 0 AND coalesce(prev, 0) = 0
                THEN f.kind END
            WHEN 'throttle' THEN CASE
                WHEN (CAST(value AS BIGINT) & 104) <> 0
                    AND (CAST(value AS BIGINT) & 104 & ~CAST(coalesce(prev, 0) AS BIGINT)) <> 0
                    THEN 'thermal_throttle'
                WHEN (CAST(value AS BIGINT) & 132) <> 0
                    AND (CAST(value AS BIGINT) & 132 & ~CAST(coalesce(prev, 0) AS BIGINT)) <> 0
                    THEN 'power_throttle' END
            ELSE CASE WHEN prev IS NOT NULL AND value > prev THEN f.kind END
        END AS kind
    FROM near n JOIN fields f USING (metric)
    WHERE n.batch_id IS NOT NULL AND NOT isnan(n.value)
)
SELECT e.ts, e.host, nullif(e.gpu, -1) AS gpu, nullif(e.uuid, '') AS uuid, e.kind,
       CASE WHEN e.kind = 'xid' THEN CAST(e.value AS INTEGER) END AS code,
       CASE WHEN e.kind = 'xid' THEN coalesce(c.description, 'unknown XID')
            WHEN e.kind LIKE '%throttle' THEN printf('clock event reasons 0x%x',
                                                      CAST(e.value AS BIGINT))
            WHEN e.kind = 'row_remap_failure' THEN 'row remapping failed'
            ELSE printf('+%d (%d in all)', CAST(e.value - coalesce(e.prev, 0) AS BIGINT),
                        CAST(e.value AS BIGINT)) END AS detail,
       e.metric, e.value, e.batch_id
FROM found e LEFT JOIN xid_codes c ON e.kind = 'xid' AND c.xid = CAST(e.value AS INTEGER)
WHERE e.kind IS NOT NULL
