-- gpu_health: per GPU that breaks a rule of wanka.health_rules, the rule, its state and the
-- evidence (the events, or the last sample of a silent GPU). `now` is the newest telemetry
-- time, so a warehouse loaded from files is judged as of its data.
WITH now_ AS (
    SELECT max(ts_max) AS now FROM wanka.sample_batches
), rules AS (
    SELECT r.*, n.now, n.now - to_seconds(r.window_s) AS since FROM wanka.health_rules r, now_ n
), evidence AS (  -- (rule, GPU, one event) for the event rules
    SELECT CASE
               WHEN e.kind = 'row_remap_failure' THEN 'remap_failure'
               WHEN e.kind = 'row_remap_uncorrectable' THEN 'uncorrectable_rows'
               WHEN e.kind = 'ecc_dbe' THEN 'ecc_dbe'
               WHEN e.kind = 'ecc_sbe' THEN 'sbe_rate'
               WHEN e.kind = 'thermal_throttle' THEN 'thermal_throttle'
               WHEN e.kind = 'power_throttle' THEN 'power_throttle'
               WHEN e.kind = 'nvlink_error' THEN 'nvlink_errors'
               WHEN c.action = 'drain_node' THEN 'xid_drain'
               WHEN c.action = 'reset_gpu' THEN 'xid_reset'
           END AS rule, e.host, e.gpu, e.uuid, e.ts, e.kind, e.code, e.detail
    FROM gpu_events e LEFT JOIN xid_codes c ON e.kind = 'xid' AND c.xid = e.code
    UNION ALL
    SELECT 'repeated_hw_xid', e.host, e.gpu, e.uuid, e.ts, e.kind, e.code, e.detail
    FROM gpu_events e JOIN xid_codes c ON e.kind = 'xid' AND c.xid = e.code
    WHERE c.category IN ('memory', 'nvlink', 'fell_off_bus') AND c.action <> 'none'
), broken AS (
    SELECT r.rule, r.state, v.host, v.gpu, v.uuid, count(*) AS n, min(v.ts) AS first_ts,
           max(v.ts) AS last_ts,
           list({'ts': v.ts, 'kind': v.kind, 'code': v.code, 'detail': v.detail}
                ORDER BY v.ts DESC)[1:5] AS evidence
    FROM evidence v JOIN rules r ON r.rule = v.rule AND v.ts > r.since AND v.ts <= r.now
    GROUP BY ALL
    HAVING count(*) >= any_value(r.threshold)
), last_seen AS (  -- each GPU's newest sample in the silent rule's window (a day back)
    SELECT x.host, x.gpu, x.uuid, max(s.ts) AS last_ts
    FROM wanka.gpu_samples s JOIN wanka.gpu_series x USING (series_id)
    WHERE s.ts > (SELECT now - INTERVAL 1 DAY FROM now_) AND x.gpu IS NOT NULL
    GROUP BY ALL
), silent AS (
    SELECT r.rule, r.state, g.host, g.gpu, g.uuid, 1 AS n, g.last_ts AS first_ts,
           g.last_ts, [{'ts': g.last_ts, 'kind': 'last_sample', 'code': NULL::INTEGER,
                        'detail': printf('silent for %d s; the host''s newest sample %d s ago',
                                         CAST(epoch(r.now - g.last_ts) AS BIGINT),
                                         CAST(epoch(r.now - h.host_last) AS BIGINT))}]
    FROM last_seen g
    JOIN (SELECT host, max(last_ts) AS host_last FROM last_seen GROUP BY host) h USING (host)
    JOIN rules r ON r.rule = 'silent'
    WHERE epoch(r.now - g.last_ts) >= r.threshold AND epoch(r.now - h.host_last) < r.threshold
)
SELECT *, CASE state WHEN 'replace' THEN 3 WHEN 'drain' THEN 2 ELSE 1 END AS severity
FROM (SELECT * FROM broken UNION ALL SELECT * FROM silent)
ORDER BY severity DESC, host, gpu, rule
