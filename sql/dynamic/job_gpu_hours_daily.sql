-- job_gpu_hours_daily: GPU-hours per account (team) per day, from jobs, by the day a job started.
-- Incremental (aggregate plan) for new jobs; a job row replaced by a later ingest (a DELETE of
-- the old row) makes the next refresh recompute the table, and the history says so.
CREATE DYNAMIC TABLE job_gpu_hours_daily WITH (freshness = '1 hour', refresh_mode = 'auto') AS
SELECT date_trunc('day', start_at) AS day,
       account,
       sum(gpus * coalesce(elapsed_s, 0)) / 3600 AS gpu_hours,
       count(*) AS jobs
FROM jobs
WHERE start_at IS NOT NULL
GROUP BY ALL
