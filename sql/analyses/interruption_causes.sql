-- interruption_causes: Interruptions by root cause, counted as Llama 3's Table 5 counts them, with the per-GPU MTBF each cause implies.
--
-- One row per cause of interruption_causes (Table 5's 18, and Unattributed), per triage text it
-- does not list, and a last row 'All causes'. What counts as one interruption:
-- - a job_events row, event 'interruption' (detail: the cause triage wrote, matched to
--   interruption_causes.cause whatever its case; a text it does not list stays as written) or
--   'xid_failure' (value: the XID, its cause from interruption_xids). A job's records $same_s
--   apart or closer are one interruption: a triage row and the xid_failure of the same stop
--   count once, the triage's cause first;
-- - a gpu_events XID that stops what runs on the GPU (interruption_xids.interrupts: a GPU reset,
--   a reboot, an uncorrectable error) that the job log does not explain: no job record
--   ('interruption', 'xid_failure', or 'xid': the job went on) on its host within $same_s, not
--   an XID the job log recorded on that GPU before and the gauge still shows (telemetry's first
--   sample of it since), and a job ran on the host (jobs.node_list; on an idle host nothing
--   stopped). A host's such XIDs $same_s apart or closer are one interruption, the first one's
--   cause. An XID near a job record is not counted again: it gives the cause of a record that
--   has none (an 'interruption' without detail: interrupting XIDs first, then the nearest),
--   else that record is Unattributed.
-- dcgm-exporter's XID field holds the last XID, so telemetry's first sample of a GPU that had
-- one on a busy host, with no job record of it, still counts once at that sample.
-- Exposure is $gpus GPUs (0: the GPUs of the inventory's nodes) over the window; gpu_mtbf_h()
-- turns each count into a per-GPU MTBF, cluster_mtbf_h() into the mean time between such
-- interruptions of one job on every GPU. Llama 3: 419 in 54 days on 16,384 H100, one per
-- 3.09 h, a per-GPU MTBF of 50,677 h. Shares are computed from the counts: Table 5 prints 30.1 %
-- for Faulty GPU's 148, which is 35.3 % of 419 (its printed shares sum to 94.9 %).
--
-- Parameters:
--   $cluster               VARCHAR = ''    only this cluster's hosts ('' = all, and records naming no host)
--   $gpus                  INTEGER = 0     GPUs exposed (0 = the GPUs of the cluster's nodes in the inventory)
--   $since                 VARCHAR = ''    window start, ISO 8601 ('' = the first row of job_events or gpu_events)
--   $until                 VARCHAR = ''    window end, ISO 8601 ('' = the last row of job_events or gpu_events)
--   $same_s                DOUBLE = 300    records of one job, or XIDs of one host, this close are one interruption, s
-- Columns:
--   category               root cause (Table 5's Component column), or the triage text as written; 'All causes' on the last row
--   component              what failed (Table 5's Category column): GPU, Network, Host, Dependency, Unplanned Maintenance, Unknown; NULL for a triage text interruption_causes does not list; 'All' on the last row
--   interruptions          interruptions, count
--   share_pct              of all interruptions, % (NULL: none)
--   gpu_mtbf_h             per-GPU MTBF this cause alone implies: GPU-hours per interruption, h (NULL: none)
--   fleet_mtbf_h           mean time between such interruptions of one job on all the GPUs, h (NULL: none)
--   llama3_interruptions   Table 5's count, of 419
--   llama3_share_pct       Table 5's count / 419, %
--   gpus                   GPUs exposed
--   hours                  window, h
WITH win AS (
    SELECT coalesce(CAST(nullif($since, '') AS TIMESTAMPTZ), min(ts)) AS lo,
           coalesce(CAST(nullif($until, '') AS TIMESTAMPTZ), max(ts)) AS hi
    FROM (SELECT ts FROM job_events UNION ALL SELECT ts FROM gpu_events) AS seen
), fleet AS (
    SELECT CAST(CASE WHEN $gpus > 0 THEN $gpus ELSE (
               SELECT sum(gpus) FROM nodes WHERE $cluster = '' OR cluster = $cluster) END
               AS BIGINT) AS gpus,
           (epoch(hi) - epoch(lo)) / 3600 AS hours
    FROM win
), records AS (  -- what the job log says: a job stopped ('interruption', 'xid_failure') or went on
    -- past an XID ('xid')
    SELECT e.job_id, e.ts, e.event, e.host, e.gpu,
           CASE WHEN e.event = 'interruption' THEN nullif(trim(e.detail), '') END AS triage,
           CASE WHEN e.event <> 'interruption' THEN CAST(e.value AS INTEGER) END AS xid
    FROM job_events AS e CROSS JOIN win AS w
    WHERE e.event IN ('interruption', 'xid_failure', 'xid') AND e.ts >= w.lo AND e.ts <= w.hi
      AND ($cluster = '' OR e.host IN (SELECT host FROM nodes WHERE cluster = $cluster))
), gaps AS (
    SELECT *, epoch(ts) - lag(epoch(ts)) OVER (PARTITION BY job_id ORDER BY ts) AS gap
    FROM records
    WHERE event <> 'xid'
), runs AS (  -- a job's stops $same_s apart or closer: one interruption
    SELECT *, sum(CASE WHEN gap IS NULL OR gap > $same_s THEN 1 ELSE 0 END)
                  OVER (PARTITION BY job_id ORDER BY ts) AS run
    FROM gaps
), ranked AS (
    SELECT *,
           row_number() OVER (PARTITION BY job_id, run ORDER BY triage IS NULL, ts, triage) AS t_rank,
           row_number() OVER (PARTITION BY job_id, run ORDER BY xid IS NULL, ts, xid) AS x_rank
    FROM runs
), stops AS (
    SELECT job_id, run,
           max(CASE WHEN t_rank = 1 THEN triage END) AS triage,
           max(CASE WHEN x_rank = 1 THEN xid END) AS xid
    FROM ranked
    GROUP BY job_id, run
), xids AS (  -- XIDs telemetry saw, with their cause (an XID not listed: Faulty GPU) and the
    -- time of the GPU's XID before
    SELECT g.ts, g.host, g.gpu, g.code, coalesce(x.cause, 'Faulty GPU') AS cause,
           coalesce(x.interrupts, false) AS interrupts,
           lag(g.ts) OVER (PARTITION BY g.host, g.gpu ORDER BY g.ts) AS prev_ts
    FROM gpu_events AS g
    CROSS JOIN win AS w
    LEFT JOIN interruption_xids AS x ON x.xid = g.code
    WHERE g.kind = 'xid' AND g.ts >= w.lo AND g.ts <= w.hi
      AND ($cluster = '' OR g.host IN (SELECT host FROM nodes WHERE cluster = $cluster))
), near AS (  -- the XIDs of a job record's host $same_s apart or closer
    SELECT r.job_id, r.event, r.ts AS record_ts, x.ts, x.host, x.code, x.cause, x.interrupts,
           abs(epoch(x.ts) - epoch(r.ts)) AS dt
    FROM records AS r JOIN xids AS x ON x.host = r.host
    WHERE abs(epoch(x.ts) - epoch(r.ts)) <= $same_s
), seen_xid AS (  -- the cause telemetry gives a stop: interrupting XIDs first, then the nearest
    SELECT job_id, run, cause FROM (
        SELECT r.job_id, r.run, n.cause,
               row_number() OVER (PARTITION BY r.job_id, r.run
                                  ORDER BY n.interrupts DESC, n.dt, n.code) AS k
        FROM runs AS r
        JOIN near AS n ON n.job_id = r.job_id AND n.record_ts = r.ts AND n.event = r.event
    ) AS c
    WHERE k = 1
), job_side AS (
    SELECT coalesce(c.cause, s.triage,
                    CASE WHEN s.xid IS NOT NULL THEN coalesce(x.cause, 'Faulty GPU') END,
                    t.cause, 'Unattributed') AS category
    FROM stops AS s
    LEFT JOIN interruption_causes AS c ON lower(c.cause) = lower(s.triage)
    LEFT JOIN interruption_xids AS x ON x.xid = s.xid
    LEFT JOIN seen_xid AS t ON t.job_id = s.job_id AND t.run = s.run
), late AS (  -- XIDs the gauge still shows after the job log recorded them (telemetry's first
    -- sample of the GPU since): not a new stop
    SELECT DISTINCT x.ts, x.host, x.code
    FROM xids AS x
    JOIN records AS r ON r.host = x.host AND r.gpu = x.gpu AND r.xid = x.code
    WHERE r.ts < x.ts AND (x.prev_ts IS NULL OR r.ts > x.prev_ts)
), placed AS (  -- the hosts jobs ran on, and when
    SELECT u.host, j.start_at, j.end_at
    FROM jobs AS j, unnest(j.node_list) AS u(host)
    WHERE j.start_at IS NOT NULL
), busy AS (  -- XIDs on a host a job ran on (until $same_s before): on an idle one, none stopped
    SELECT DISTINCT x.ts, x.host, x.code
    FROM xids AS x JOIN placed AS p ON p.host = x.host
    WHERE x.interrupts AND p.start_at <= x.ts
      AND (p.end_at IS NULL OR epoch(p.end_at) >= epoch(x.ts) - $same_s)
), alone AS (  -- interrupting XIDs no job record explains
    SELECT x.ts, x.host, x.code, x.cause,
           epoch(x.ts) - lag(epoch(x.ts)) OVER (PARTITION BY x.host ORDER BY x.ts) AS gap
    FROM xids AS x
    JOIN busy AS b ON b.ts = x.ts AND b.host = x.host AND b.code = x.code
    LEFT JOIN (SELECT DISTINCT ts, host, code FROM near) AS n
        ON n.ts = x.ts AND n.host = x.host AND n.code = x.code
    LEFT JOIN late AS l ON l.ts = x.ts AND l.host = x.host AND l.code = x.code
    WHERE x.interrupts AND n.host IS NULL AND l.host IS NULL
), host_runs AS (  -- a host's XIDs $same_s apart or closer: one interruption
    SELECT *, sum(CASE WHEN gap IS NULL OR gap > $same_s THEN 1 ELSE 0 END)
                  OVER (PARTITION BY host ORDER BY ts) AS run
    FROM alone
), gpu_side AS (
    SELECT cause AS category FROM (
        SELECT cause, row_number() OVER (PARTITION BY host, run ORDER BY ts, code) AS k
        FROM host_runs
    ) AS h
    WHERE k = 1
), counted AS (
    SELECT category, count(*) AS n
    FROM (SELECT category FROM job_side UNION ALL SELECT category FROM gpu_side) AS a
    GROUP BY category
), listed AS (  -- every cause listed, and the triage texts it does not list
    SELECT c.cause AS category, c.component, c.llama3_interruptions, coalesce(k.n, 0) AS n
    FROM interruption_causes AS c LEFT JOIN counted AS k ON k.category = c.cause
    UNION ALL
    SELECT k.category, NULL, NULL, k.n
    FROM counted AS k LEFT JOIN interruption_causes AS c ON c.cause = k.category
    WHERE c.cause IS NULL
), all_rows AS (
    SELECT * FROM listed
    UNION ALL
    SELECT 'All causes', 'All', CAST(sum(llama3_interruptions) AS BIGINT),
           CAST(sum(n) AS BIGINT)
    FROM listed
), rated AS (
    SELECT a.*, f.gpus, f.hours,
           gpu_mtbf_h(nullif(a.n, 0), nullif(f.gpus, 0), CASE WHEN f.hours > 0 THEN f.hours END)
               AS mtbf,
           sum(CASE WHEN a.category = 'All causes' THEN a.n END) OVER () AS total,
           sum(CASE WHEN a.category = 'All causes' THEN a.llama3_interruptions END) OVER ()
               AS llama3_total
    FROM all_rows AS a CROSS JOIN fleet AS f
)
SELECT category, component,
       n AS interruptions,
       round(100.0 * n / nullif(total, 0), 1) AS share_pct,
       round(mtbf, 0) AS gpu_mtbf_h,
       round(cluster_mtbf_h(mtbf, nullif(gpus, 0)), 2) AS fleet_mtbf_h,
       llama3_interruptions,
       round(100.0 * llama3_interruptions / llama3_total, 1) AS llama3_share_pct,
       gpus,
       round(hours, 1) AS hours
FROM rated
ORDER BY category = 'All causes', interruptions DESC, llama3_interruptions DESC NULLS LAST, category
