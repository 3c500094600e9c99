-- Health findings from each GPU's newest counters (wanka.gpu_event_state, moved on at ingest):
--   remapped_rows  rows remapped so far, correctable and uncorrectable, at least `threshold` of
--                  the 512 a GPU can remap (NVIDIA: a remap after 512, or on a bank with 8
--                  uncorrectable ones, sets the row-remap failure flag, the RMA criterion)
-- Since the GPU's first remap event, flagged at its last (by then the total stood where it
-- stands, past the threshold; without events, at the counters' newest sample); current while
-- the counters were read within `window_s` of the newest telemetry.
WITH now_ AS (
    SELECT max(ts_max) AS now FROM wanka.sample_batches
), rules AS (
    SELECT threshold, to_seconds(window_s) AS span FROM wanka.health_rules
    WHERE rule = 'remapped_rows'
), counters AS (
    SELECT host, gpu, uuid, max(ts) AS ts,
           sum(value) AS remapped,
           sum(value) FILTER (WHERE metric = 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS')
               AS uncorrectable
    FROM wanka.gpu_event_state
    WHERE metric IN ('DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
                     'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS')
        AND NOT isnan(value)
    GROUP BY ALL
), over AS (
    SELECT c.*, r.span FROM counters c, rules r WHERE c.remapped >= r.threshold
), remaps AS (  -- those GPUs' remap events: the first, and the last (the newest change of
    -- either counter, so the total was at its newest value, past the threshold, by then)
    SELECT o.host, o.gpu, o.uuid, min(e.ts) AS first_ts, max(e.ts) AS last_ts
    FROM over o JOIN gpu_events e
        ON e.host = o.host AND coalesce(e.gpu, -1) = o.gpu AND coalesce(e.uuid, '') = o.uuid
    WHERE e.kind IN ('row_remap', 'row_remap_uncorrectable')
    GROUP BY ALL
)
SELECT 'remapped_rows' AS rule, o.host, nullif(o.gpu, -1) AS gpu, nullif(o.uuid, '') AS uuid,
       CAST(o.remapped AS BIGINT) AS n, coalesce(f.first_ts, o.ts) AS since,
       coalesce(f.last_ts, o.ts) AS flagged_at, o.ts AS until, o.ts > n.now - o.span AS current,
       [{'ts': o.ts, 'kind': 'row_remap', 'code': NULL::INTEGER,
         'detail': printf('%d of 512 spare rows remapped (%d for uncorrectable errors)',
                          CAST(o.remapped AS BIGINT),
                          CAST(coalesce(o.uncorrectable, 0) AS BIGINT))}] AS evidence
FROM over o LEFT JOIN remaps f USING (host, gpu, uuid), now_ n
