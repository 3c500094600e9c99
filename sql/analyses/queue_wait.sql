-- queue_wait: Queue wait by job size and team: how long jobs of each size wait to start.
--
-- Wait is start_at − submit_at of every job that started. Sizes are GPU-count classes; the
-- cluster is the job's cluster, or 'demo' for the simulated Slurm jobs (whose sacct dump names
-- none). Kubernetes pods count too (the Alibaba GPU trace): wait is scheduled − created, the
-- size their GPU count (a shared GPU counts as 1), the team their QoS class. Traces without
-- start times (Philly as AdaptDL publishes it) have no rows here.
--
-- Parameters:
--   $cluster       VARCHAR = ''   only this cluster ('' = every cluster)
-- Columns:
--   cluster        cluster of the jobs
--   size_class     GPUs per job: 1, 2-4, 5-8, 9-64, 65-512, 513+ (0 = CPU-only)
--   team           account that submitted them (pods: 'qos ' and the QoS class)
--   jobs           jobs that started, count
--   p50_wait_s     median wait, s
--   p90_wait_s     90th percentile wait, s
--   mean_wait_s    mean wait, s
--   gpu_hours      GPU-hours the jobs ran, GPU-h
WITH started AS (
    SELECT coalesce(cluster, 'demo') AS cluster,
           coalesce(account, '(none)') AS team,
           coalesce(gpus, 0) AS gpus,
           epoch(start_at - submit_at) AS wait_s,
           coalesce(gpus, 0) * coalesce(elapsed_s, 0) / 3600 AS gpu_hours
    FROM jobs
    WHERE start_at IS NOT NULL AND submit_at IS NOT NULL
    UNION ALL
    SELECT coalesce(cluster, 'pods'), 'qos ' || coalesce(qos, '?'), coalesce(num_gpu, 0),
           epoch(scheduled_at - created_at),
           coalesce(gpus, 0) * coalesce(epoch(deleted_at - scheduled_at), 0) / 3600
    FROM pods
    WHERE scheduled_at IS NOT NULL AND created_at IS NOT NULL
), chosen AS (
    SELECT * FROM started WHERE $cluster = '' OR cluster = $cluster
)
SELECT cluster,
       CASE WHEN gpus = 0 THEN '0' WHEN gpus = 1 THEN '1' WHEN gpus <= 4 THEN '2-4'
            WHEN gpus <= 8 THEN '5-8' WHEN gpus <= 64 THEN '9-64' WHEN gpus <= 512 THEN '65-512'
            ELSE '513+' END AS size_class,
       team,
       count(*) AS jobs,
       round(median(wait_s), 1) AS p50_wait_s,
       round(quantile_cont(wait_s, 0.9), 1) AS p90_wait_s,
       round(avg(wait_s), 1) AS mean_wait_s,
       round(sum(gpu_hours), 1) AS gpu_hours
FROM chosen
GROUP BY ALL
ORDER BY cluster, min(gpus), team
