-- fragmentation: Stranded GPUs by job size: free GPUs that a job of each size cannot use, at one moment.
--
-- At time $at (default: the latest job start in `jobs`), each node's free GPUs are its GPUs
-- less those of the jobs running on it (a job's GPUs spread evenly over its nodes). For a job
-- size, stranded_gpus() counts the free GPUs it cannot use: within a node, free mod size; for
-- multi-node jobs, which take whole nodes, every free GPU of a partly busy node.
--
-- Parameters:
--   $at                VARCHAR = ''   the moment, ISO 8601 ('' = the latest job start)
--   $cluster           VARCHAR = ''   only this cluster ('' = every cluster)
-- Columns:
--   cluster            cluster
--   job_gpus           GPUs the job asks for
--   free_gpus          free GPUs in the cluster at $at, GPUs
--   stranded_gpus      free GPUs a job of job_gpus cannot use, GPUs
--   stranded_pct       stranded_gpus / free_gpus, %
--   jobs_that_fit      jobs of job_gpus that could start now, count
WITH moment AS (
    SELECT CASE WHEN $at = '' THEN (SELECT max(start_at) FROM jobs WHERE node_list IS NOT NULL)
                ELSE CAST($at AS TIMESTAMPTZ) END AS t
), running AS (
    SELECT u.host, j.gpus / greatest(len(j.node_list), 1) AS gpus_here
    FROM jobs AS j, moment AS m, unnest(j.node_list) AS u(host)
    WHERE j.start_at <= m.t AND (j.end_at IS NULL OR j.end_at > m.t) AND j.gpus > 0
), free AS (
    SELECT n.cluster, n.host, n.gpus AS node_gpus,
           greatest(n.gpus - coalesce(sum(r.gpus_here), 0), 0)::INTEGER AS free_gpus
    FROM nodes AS n LEFT JOIN running AS r USING (host)
    WHERE n.gpus > 0 AND coalesce(n.state, 'up') = 'up'
      AND ($cluster = '' OR n.cluster = $cluster)
    GROUP BY n.cluster, n.host, n.gpus
), sizes AS (
    SELECT unnest([1, 2, 4, 8, 16, 64, 256]) AS job_gpus
), per_node AS (
    SELECT f.cluster, s.job_gpus, f.free_gpus, f.node_gpus,
           stranded_gpus(f.free_gpus, f.node_gpus, s.job_gpus) AS stranded,
           CASE WHEN s.job_gpus <= f.node_gpus THEN f.free_gpus // s.job_gpus
                WHEN f.free_gpus = f.node_gpus THEN 1 ELSE 0 END AS slots
    FROM free AS f, sizes AS s
)
SELECT cluster, job_gpus,
       CAST(sum(free_gpus) AS BIGINT) AS free_gpus,
       CAST(sum(stranded) AS BIGINT) AS stranded_gpus,
       round(100.0 * sum(stranded) / nullif(sum(free_gpus), 0), 1) AS stranded_pct,
       CAST(CASE WHEN job_gpus <= max(node_gpus) THEN sum(slots)
                 ELSE sum(slots) * max(node_gpus) // job_gpus END AS BIGINT) AS jobs_that_fit
FROM per_node
GROUP BY cluster, job_gpus
ORDER BY cluster, job_gpus
