-- job_size_shares: Share of jobs and of GPU time by job size, per cluster (the Philly paper's view).
--
-- Jeon et al. (ATC'19) describe Philly by how GPU time splits across job sizes: most jobs use
-- one GPU, most GPU time goes to multi-GPU jobs. This computes the same split for any cluster
-- in `jobs`, GPU time being gpus × elapsed run time.
--
-- Parameters:
--   $cluster          VARCHAR = ''   only this cluster ('' = every cluster)
-- Columns:
--   cluster           cluster ('demo' for the simulated Slurm jobs)
--   size_class        GPUs per job: 1, 2-4, 5-8, 9-16, 17-64, 65+
--   jobs              jobs, count
--   jobs_pct          share of the cluster's GPU jobs, %
--   gpu_hours         GPU time, GPU-h
--   gpu_time_pct      share of the cluster's GPU time, %
WITH j AS (
    SELECT coalesce(cluster, 'demo') AS cluster, gpus,
           gpus * coalesce(elapsed_s, 0) / 3600 AS gpu_hours
    FROM jobs
    WHERE gpus > 0 AND ($cluster = '' OR coalesce(cluster, 'demo') = $cluster)
), classes AS (
    SELECT cluster,
           CASE WHEN gpus = 1 THEN '1' WHEN gpus <= 4 THEN '2-4' WHEN gpus <= 8 THEN '5-8'
                WHEN gpus <= 16 THEN '9-16' WHEN gpus <= 64 THEN '17-64' ELSE '65+' END AS size_class,
           min(gpus) AS smallest, count(*) AS jobs, sum(gpu_hours) AS gpu_hours
    FROM j GROUP BY ALL
)
SELECT cluster, size_class, jobs,
       round(100 * jobs / sum(jobs) OVER (PARTITION BY cluster), 2) AS jobs_pct,
       round(gpu_hours, 1) AS gpu_hours,
       round(100 * gpu_hours / nullif(sum(gpu_hours) OVER (PARTITION BY cluster), 0), 2) AS gpu_time_pct
FROM classes
ORDER BY cluster, smallest
