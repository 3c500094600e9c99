-- xid_errors_by_model: how often GPUs of each model report XID errors, per hour.
-- DCGM_FI_DEV_XID_ERRORS is a gauge holding the last XID code a GPU reported (0 before any), so
-- a sample with value > 0 is one scrape of one GPU showing an XID error.
--   xid_samples        samples with value > 0 (scrapes showing an XID), count
--   gpus_with_xid      distinct GPUs (uuid) showing an XID in the hour, count
--   gpus_reporting     distinct GPUs reporting the field in the hour = GPU-hours observed
--   gpus_with_xid_per_1k_gpu_hours   gpus_with_xid per 1,000 GPU-hours observed
-- Groups plan: count(DISTINCT ...) is not decomposable, so a refresh recomputes only the hours
-- and models of the rows inserted, updated or deleted since the last one.
CREATE DYNAMIC TABLE xid_errors_by_model WITH (freshness = '15 minutes', refresh_mode = 'auto') AS
SELECT time_bucket(INTERVAL '1 hour', ts) AS hour,
       model,
       count(*) FILTER (WHERE value > 0) AS xid_samples,
       count(DISTINCT uuid) FILTER (WHERE value > 0) AS gpus_with_xid,
       count(DISTINCT uuid) AS gpus_reporting,
       1000.0 * count(DISTINCT uuid) FILTER (WHERE value > 0)
           / count(DISTINCT uuid) AS gpus_with_xid_per_1k_gpu_hours
FROM gpu_metrics
WHERE metric = 'DCGM_FI_DEV_XID_ERRORS'
GROUP BY ALL
