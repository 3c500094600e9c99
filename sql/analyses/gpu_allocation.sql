-- gpu_allocation: GPUs allocated to jobs over time per cluster, and the share of the cluster's GPUs that is.
--
-- A job holds its GPUs from start_at for elapsed_s. Traces without start times (Philly as
-- AdaptDL publishes it) use the submit time, so their curve is demand rather than allocation.
-- Each bucket shows the largest number of GPUs held at once in it (a sweep over start and end
-- events, so a job shorter than a bucket still counts). Kubernetes pods (the Alibaba GPU trace)
-- hold their GPU share (num_gpu × gpu_milli / 1000) from scheduling to deletion. Capacity is
-- the GPUs of the cluster's hosts where the inventory knows them.
--
-- Parameters:
--   $bucket          VARCHAR = '1 hour'   time bucket, a DuckDB interval ('1 hour', '1 day')
--   $cluster         VARCHAR = ''         only this cluster ('' = every cluster)
-- Columns:
--   cluster          cluster ('demo' for the simulated Slurm jobs)
--   bucket_start     start of the time bucket, UTC
--   peak_gpus        most GPUs held at once in the bucket, GPUs (fractional for shared GPUs)
--   capacity_gpus    GPUs the cluster has (NULL when the inventory does not know it)
--   peak_alloc_pct   peak_gpus / capacity_gpus, %
WITH all_spans AS (
    SELECT coalesce(cluster, 'demo') AS cluster,
           coalesce(start_at, submit_at) AS t0,
           coalesce(start_at, submit_at) + to_microseconds(CAST(elapsed_s * 1e6 AS BIGINT)) AS t1,
           CAST(gpus AS DOUBLE) AS gpus
    FROM jobs
    WHERE gpus > 0 AND elapsed_s IS NOT NULL AND coalesce(start_at, submit_at) IS NOT NULL
    UNION ALL
    SELECT coalesce(cluster, 'pods'), scheduled_at, deleted_at, gpus
    FROM pods
    WHERE gpus > 0 AND scheduled_at IS NOT NULL AND deleted_at IS NOT NULL
), spans AS (
    SELECT * FROM all_spans WHERE $cluster = '' OR cluster = $cluster
), events AS (
    SELECT cluster, t0 AS t, gpus AS delta FROM spans
    UNION ALL
    SELECT cluster, t1 AS t, -gpus AS delta FROM spans
), held AS (
    SELECT cluster, t,
           round(sum(delta) OVER (PARTITION BY cluster ORDER BY t ROWS UNBOUNDED PRECEDING), 3) AS gpus_held
    FROM events
), capacity AS (
    SELECT cluster, CAST(sum(gpus) AS BIGINT) AS gpus FROM nodes GROUP BY cluster
    UNION ALL
    SELECT 'demo', CAST(sum(gpus) AS BIGINT) FROM nodes
      WHERE cluster IN (SELECT cluster FROM clusters WHERE scheduler = 'slurm')
)
SELECT h.cluster,
       time_bucket(CAST($bucket AS INTERVAL), h.t) AS bucket_start,
       max(h.gpus_held) AS peak_gpus,
       any_value(c.gpus) AS capacity_gpus,
       round(100.0 * max(h.gpus_held) / any_value(c.gpus), 1) AS peak_alloc_pct
FROM held AS h LEFT JOIN capacity AS c USING (cluster)
GROUP BY ALL
ORDER BY h.cluster, bucket_start
