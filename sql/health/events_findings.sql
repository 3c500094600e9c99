-- Health findings from gpu_events: per rule of wanka.health_rules over events and per GPU, when
-- the rule first held (at least `threshold` of its events within `window_s` seconds), its first
-- and last event, and whether it is current: it held within the last `window_s` (at least a
-- day) before the newest telemetry — a GPU whose errors climbed an hour ago is still watched.
-- Columns as every findings file: rule, host, gpu, uuid, n, since, flagged_at, until, current,
-- evidence (the newest 5 events).
WITH now_ AS (
    SELECT max(ts_max) AS now FROM wanka.sample_batches
), evidence AS (  -- (rule, GPU, one event)
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
           END AS rule, e.host, e.gpu, e.uuid, e.ts, e.kind, e.code, e.detail, e.value
    FROM gpu_events e LEFT JOIN xid_codes c ON e.kind = 'xid' AND c.xid = e.code
    UNION ALL  -- hardware XIDs again and again
    SELECT 'repeated_hw_xid', e.host, e.gpu, e.uuid, e.ts, e.kind, e.code, e.detail, e.value
    FROM gpu_events e JOIN xid_codes c ON e.kind = 'xid' AND c.xid = e.code
    WHERE c.category IN ('memory', 'nvlink', 'fell_off_bus') AND c.action <> 'none'
    UNION ALL  -- corrected errors climbing: many increases in a short window
    SELECT 'sbe_climb', e.host, e.gpu, e.uuid, e.ts, e.kind, e.code, e.detail, e.value
    FROM gpu_events e WHERE e.kind = 'ecc_sbe'
), ruled AS MATERIALIZED (
    SELECT v.*, coalesce(v.gpu, -1) AS g, coalesce(v.uuid, '') AS u, r.threshold,
           to_seconds(r.window_s) AS span
    FROM evidence v JOIN wanka.health_rules r USING (rule)
), data_start AS (
    SELECT min(ts_min) AS t0 FROM wanka.sample_batches
), held AS (  -- per event, the rule's events in the window ending at it (n) and, for sbe_climb,
        -- in the 6 hours before that window (n_before, over `known` seconds of telemetry)
    SELECT a.rule, a.host, a.g, a.u, a.ts, any_value(a.threshold) AS threshold,
           any_value(a.value) AS value,
           count(*) FILTER (WHERE b.ts > a.ts - a.span) AS n,
           count(*) FILTER (WHERE b.ts <= a.ts - a.span) AS n_before,
           greatest(0, least(6 * 3600, epoch(a.ts - a.span) - epoch(any_value(d.t0)))) AS known
    FROM ruled a JOIN ruled b ON a.rule = b.rule AND a.host = b.host AND a.g = b.g
        AND a.u = b.u AND b.ts <= a.ts
        AND b.ts > a.ts - a.span - CASE a.rule WHEN 'sbe_climb' THEN INTERVAL 6 HOUR
                                               ELSE INTERVAL 0 SECOND END
    CROSS JOIN data_start d
    GROUP BY a.rule, a.host, a.g, a.u, a.ts, a.span
), judged AS (  -- sbe_climb: a climb is the GPU's own rate gone up, not a steady trickle: the
    -- window's count must also be a 1-in-a-million count for a Poisson process at its rate
    -- before (lambda per window, at least 0.1): P(N >= n) <= e^-lambda lambda^n / n! /
    -- (1 - lambda / (n + 1)) for n > lambda (the tail's first term times the geometric series
    -- that bounds the rest), in logs. Where the telemetry does not reach a window back, the
    -- counter says: under 100 errors since the driver loaded is a GPU that had none to speak
    -- of; more is a trickle whose rate is not known yet
    SELECT *, CASE WHEN rule <> 'sbe_climb' THEN n >= threshold
                   ELSE n >= threshold AND n > lam + 1
                        AND -lam + n * ln(lam) - lgamma(n + 1) - ln(1 - lam / (n + 1))
                            <= ln(1e-6)
                        AND (known >= epoch(to_seconds(900)) OR value - n < 100) END AS holds
    FROM (SELECT *, greatest(0.1, CASE WHEN known > 0
                                     THEN n_before * epoch(to_seconds(900)) / known
                                     ELSE 0 END) AS lam
          FROM held)
), flagged AS (
    SELECT rule, host, g, u, min(ts) AS flagged_at, max(ts) AS last_held
    FROM judged WHERE holds GROUP BY ALL
)
SELECT v.rule, v.host, v.gpu, v.uuid, count(*) AS n, min(v.ts) AS since, f.flagged_at,
       max(v.ts) AS until,
       f.last_held > any_value(n.now) - greatest(any_value(v.span), INTERVAL 1 DAY) AS current,
       list({'ts': v.ts, 'kind': v.kind, 'code': v.code, 'detail': v.detail}
            ORDER BY v.ts DESC)[1:5] AS evidence
FROM ruled v JOIN flagged f USING (rule, host, g, u), now_ n
GROUP BY v.rule, v.host, v.gpu, v.uuid, f.flagged_at, f.last_held
