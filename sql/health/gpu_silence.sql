-- gpu_events of kind 'silent' that the batches {batches} show: a GPU that sent no sample of any
-- event field (wanka.gpu_event_fields; dcgm-exporter sends its XID gauge with every scrape) for
-- {silent_s} s (the `silent` rule's threshold) while the fleet kept reporting, its node not down
-- or drained in `nodes`. The event is at the last sample + {silent_s} s; `metric` is the field of
-- that last sample, `value` how long the GPU has been silent as far as the batch shows (to its
-- next sample, or to the batch's newest).
-- The detail says whether the whole host fell silent or the GPU alone (another GPU of the host
-- reported in the gap, later than half the threshold after this one's last sample).
--
-- A silence is a gap between two samples of the GPU (its newest before the batch, in
-- wanka.gpu_event_state, or one of the batch's), or from its newest sample to the batch's newest,
-- of at least the threshold and half of it again, in which the fleet reported (a sample of the
-- batch, or an earlier batch's span) at or after the threshold and half a threshold before the
-- GPU's return: a gap in everybody's samples (the collector was down) is nobody's silence, nor is
-- a GPU back from one a little after the others (targets are scraped at staggered times). One
-- silence is one event, however many batches see it: they all place it at the same time, and a
-- GPU has one event of the kind at a time. Silences that began more than {lookback_s} s before the
-- batch's newest sample are not looked for (a GPU taken out of the fleet long ago is no news).
WITH fresh AS MATERIALIZED (  -- the batches' sample times per GPU (and a field seen then), from
    -- their samples of event fields ({fresh}: gpu_event_samples.sql)
    SELECT host, gpu, uuid, ts, min(metric) AS metric, min(batch_id) AS batch_id
    FROM {fresh}
    GROUP BY ALL
), times AS (  -- when the fleet reported, as the batches show it
    SELECT ts FROM fresh GROUP BY ts
), newest AS (
    SELECT max(ts) AS now, (SELECT max(batch_id) FROM fresh) AS batch_id FROM times
), fleet AS (  -- when the fleet reported: the batches' sample times, the spans of those before
    SELECT ts AS lo, ts AS hi FROM times
    UNION ALL
    SELECT b.ts_min, b.ts_max FROM wanka.sample_batches b, newest n
    WHERE b.batch_id NOT IN ({batches}) AND b.ts_max >= n.now - INTERVAL '{lookback_s} seconds'
), before AS (  -- each GPU's newest sample before the batch
    SELECT host, gpu, uuid, max(ts) AS ts, arg_max(metric, ts) AS metric
    FROM wanka.gpu_event_state GROUP BY ALL
), everyone AS (  -- each GPU's samples: its newest before the batch, then the batch's
    SELECT * FROM before
    UNION ALL
    SELECT host, gpu, uuid, ts, metric FROM fresh
), known AS (  -- those a silence can follow: every sample of the GPUs the batch carries; of
    -- the others, the newest where it is old enough for a silence to now (the one gap that
    -- such a GPU can show). So the window below sorts the batch's GPUs, not the fleet's.
    SELECT b.host, b.gpu, b.uuid, b.ts, b.metric
    FROM before b LEFT JOIN (SELECT DISTINCT host, gpu, uuid, true AS carried FROM fresh) f
        USING (host, gpu, uuid), newest n
    WHERE f.carried OR b.ts <= n.now - INTERVAL '{silent_s} seconds' - INTERVAL '{half_s} seconds'
    UNION
    SELECT host, gpu, uuid, ts, metric FROM fresh
), gaps AS (  -- silent past the threshold, and half of it longer (to the next sample, or now)
    SELECT g.*, n.now, n.batch_id,
           g.last_ts + INTERVAL '{silent_s} seconds' AS silent_at,
           coalesce(g.back, n.now) - INTERVAL '{half_s} seconds' AS sure_at
    FROM (
        SELECT host, gpu, uuid, ts AS last_ts, metric,
               lead(ts) OVER (PARTITION BY host, gpu, uuid ORDER BY ts) AS back
        FROM known
    ) g, newest n
    WHERE coalesce(g.back, n.now) - INTERVAL '{half_s} seconds'
            >= g.last_ts + INTERVAL '{silent_s} seconds'
        AND g.last_ts > n.now - INTERVAL '{lookback_s} seconds'
        AND g.host NOT IN (SELECT host FROM nodes WHERE state IN ('down', 'drain'))
), seen AS (  -- the fleet reported after the GPU's threshold and half a threshold before its
    -- return: a gap in everybody's samples (the collector down) is no GPU's silence, nor is a
    -- GPU that comes back from one a little after the others (scrapes are staggered)
    SELECT g.* FROM gaps g
    WHERE EXISTS (SELECT 1 FROM fleet f WHERE f.hi >= g.silent_at AND f.lo <= g.sure_at)
)
SELECT s.silent_at AS ts, s.host, nullif(s.gpu, -1) AS gpu,
       nullif(s.uuid, '') AS uuid, 'silent' AS kind, NULL::INTEGER AS code,
       CASE WHEN EXISTS (  -- another GPU of the host reported during the silence
                SELECT 1 FROM everyone k
                WHERE k.host = s.host AND NOT (k.gpu = s.gpu AND k.uuid = s.uuid)
                    AND k.ts > s.last_ts + INTERVAL '{half_s} seconds'
                    AND k.ts <= coalesce(s.back, s.now))
            THEN printf('GPU fell silent: no samples after %s while its host reported',
                        strftime(s.last_ts, '%Y-%m-%d %H:%M:%S'))
            ELSE printf('host fell silent: no GPU of %s reported after %s', s.host,
                        strftime(s.last_ts, '%Y-%m-%d %H:%M:%S')) END AS detail,
       s.metric, epoch(coalesce(s.back, s.now) - s.last_ts) AS value, s.batch_id
FROM seen s
WHERE NOT EXISTS (
    SELECT 1 FROM gpu_events e
    WHERE e.kind = 'silent' AND e.host = s.host AND coalesce(e.gpu, -1) = s.gpu
        AND coalesce(e.uuid, '') = s.uuid
        AND e.ts = s.silent_at)
