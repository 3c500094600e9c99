-- gpu_hours_by_state: GPU-hours by final job state (completed, failed, cancelled, ...) per cluster.
--
-- GPU-hours are gpus × elapsed run time. States are Slurm base states; a trace that publishes
-- none (Philly as AdaptDL gives it) shows 'UNKNOWN'. Jobs still running count what they ran.
-- Kubernetes pods (the Alibaba GPU trace) count with their phase (SUCCEEDED, FAILED, RUNNING,
-- PENDING) and the GPU share they held from scheduling to deletion.
--
-- Parameters:
--   $cluster       VARCHAR = ''   only this cluster ('' = every cluster)
-- Columns:
--   cluster        cluster ('demo' for the simulated Slurm jobs)
--   state          final state
--   jobs           jobs, count
--   gpu_hours      GPU-hours, GPU-h
--   gpu_hours_pct  share of the cluster's GPU-hours, %
--   jobs_pct       share of the cluster's jobs, %
WITH all_work AS (
    SELECT coalesce(cluster, 'demo') AS cluster,
           coalesce(state, 'UNKNOWN') AS state,
           coalesce(gpus, 0) * coalesce(elapsed_s, 0) / 3600 AS gpu_hours
    FROM jobs
    UNION ALL
    SELECT coalesce(cluster, 'pods'), upper(coalesce(pod_phase, 'UNKNOWN')),
           coalesce(gpus, 0) * coalesce(epoch(deleted_at - scheduled_at), 0) / 3600
    FROM pods
), j AS (
    SELECT * FROM all_work WHERE $cluster = '' OR cluster = $cluster
), by_state AS (
    SELECT cluster, state, count(*) AS jobs, sum(gpu_hours) AS gpu_hours FROM j GROUP BY ALL
)
SELECT cluster, state, jobs,
       round(gpu_hours, 1) AS gpu_hours,
       round(100 * gpu_hours / nullif(sum(gpu_hours) OVER (PARTITION BY cluster), 0), 2) AS gpu_hours_pct,
       round(100 * jobs / sum(jobs) OVER (PARTITION BY cluster), 2) AS jobs_pct
FROM by_state
ORDER BY cluster, gpu_hours DESC, state
