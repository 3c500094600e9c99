-- failure_correlated_jobs: Jobs that failed together: failures on the same host within a window, and the XID that preceded them.
--
-- A failed job (FAILED, NODE_FAIL) is correlated with another when both ran on a common host
-- and ended within $window_s of each other — the signature of a bad node, switch or PDU rather
-- than a bad job. For each such job the XID logged for it just before its end, if any, is shown.
--
-- Parameters:
--   $window_s                 DOUBLE = 300   how close two failures must be, s
-- Columns:
--   host                      the host the failed jobs shared
--   job_id                    a failed job
--   state                     its end state
--   end_at                    when it ended, UTC
--   gpus                      its GPUs
--   correlated_jobs           other failed jobs on this host ending within $window_s, count
--   xid_code                  the last XID logged for the job (NULL: none)
WITH failed AS (
    SELECT j.job_id, j.state, j.end_at, j.gpus, u.host
    FROM jobs AS j, unnest(j.node_list) AS u(host)
    WHERE j.state IN ('FAILED', 'NODE_FAIL') AND j.end_at IS NOT NULL
), pairs AS (
    SELECT a.host, a.job_id, count(*) AS correlated_jobs
    FROM failed AS a JOIN failed AS b
      ON a.host = b.host AND a.job_id <> b.job_id
     AND abs(epoch(a.end_at - b.end_at)) <= $window_s
    GROUP BY a.host, a.job_id
), last_xid AS (
    SELECT job_id, CAST(arg_max(value, ts) AS INTEGER) AS xid_code
    FROM job_events WHERE event IN ('xid', 'xid_failure') GROUP BY job_id
)
SELECT f.host, f.job_id, f.state, f.end_at, f.gpus, p.correlated_jobs, x.xid_code
FROM pairs AS p
JOIN failed AS f USING (host, job_id)
LEFT JOIN last_xid AS x USING (job_id)
ORDER BY p.correlated_jobs DESC, f.end_at, f.host, f.job_id
