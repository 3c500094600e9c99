-- xid_by_model: XID errors by GPU model: how many GPUs show them per 1,000 GPU-hours, and which codes jobs met.
--
-- Telemetry side: the xid_errors_by_model dynamic table (hourly, from DCGM_FI_DEV_XID_ERRORS)
-- summed over its hours. Job side: xid and xid_failure events in job_events by code, placed on
-- a model through the host's inventory row; the most frequent code is named.
--
-- Parameters:
--   $min_gpu_hours            DOUBLE = 0    leave out models observed for fewer GPU-hours
-- Columns:
--   model                     GPU model
--   gpu_hours_observed        GPU-hours of XID telemetry, GPU-h
--   gpus_with_xid             GPU-hours in which a GPU showed an XID, count
--   per_1k_gpu_hours          gpus_with_xid per 1,000 GPU-hours observed
--   job_xid_events            XID events jobs logged, count
--   fatal_events              of those, fatal (the job was killed), count
--   top_code                  the XID code jobs met most
WITH telemetry AS (
    SELECT model, CAST(sum(gpus_reporting) AS BIGINT) AS gpu_hours,
           CAST(sum(gpus_with_xid) AS BIGINT) AS with_xid
    FROM xid_errors_by_model GROUP BY model
), events AS (
    SELECT n.gpu_model AS model, e.event, CAST(e.value AS INTEGER) AS code
    FROM job_events AS e JOIN nodes AS n ON n.host = e.host
    WHERE e.event IN ('xid', 'xid_failure')
), by_code AS (
    SELECT model, code, count(*) AS n FROM events GROUP BY ALL
), per_model AS (
    SELECT model, count(*) AS job_xid_events,
           count(*) FILTER (WHERE event = 'xid_failure') AS fatal_events
    FROM events GROUP BY model
)
SELECT coalesce(t.model, p.model) AS model,
       coalesce(t.gpu_hours, 0) AS gpu_hours_observed,
       coalesce(t.with_xid, 0) AS gpus_with_xid,
       round(1000.0 * t.with_xid / nullif(t.gpu_hours, 0), 2) AS per_1k_gpu_hours,
       coalesce(p.job_xid_events, 0) AS job_xid_events,
       coalesce(p.fatal_events, 0) AS fatal_events,
       (SELECT arg_max(code, n) FROM by_code AS c WHERE c.model = coalesce(t.model, p.model)) AS top_code
FROM telemetry AS t FULL JOIN per_model AS p USING (model)
WHERE coalesce(t.gpu_hours, 0) >= $min_gpu_hours
ORDER BY per_1k_gpu_hours DESC NULLS LAST, model
