-- interruptions: Interruptions per 1,000 GPU-days per cluster, per-GPU MTBF, and the MTBF a job of a given scale sees.
--
-- An interruption is a job ended by the hardware: an xid_failure event (a fatal XID on one of
-- its GPUs) or a NODE_FAIL end state. Exposure is the GPU-days jobs ran on the cluster (gpus ×
-- elapsed, placed by the job's first node). gpu_mtbf_h() turns the rate into a per-GPU MTBF;
-- cluster_mtbf_h() scales it to a job spanning $job_gpus GPUs — the reason a 16k-GPU run is
-- interrupted every few hours (Llama 3: 419 in 54 days).
--
-- Parameters:
--   $job_gpus                 INTEGER = 16384   GPUs of the job whose MTBF is asked for
-- Columns:
--   cluster                   cluster
--   gpu_model                 GPU model of the cluster's hosts
--   gpu_days                  GPU-days jobs ran, GPU-d
--   interruptions             jobs interrupted by hardware, count
--   per_1k_gpu_days           interruptions per 1,000 GPU-days
--   gpu_mtbf_h                per-GPU mean time between failures, h (NULL: none seen)
--   job_mtbf_h                mean time between interruptions of a $job_gpus-GPU job, h
WITH placed AS (
    SELECT j.job_id, j.gpus, j.elapsed_s, j.state, n.cluster, n.gpu_model
    FROM jobs AS j JOIN nodes AS n ON n.host = j.node_list[1]
    WHERE j.gpus > 0 AND j.elapsed_s > 0
), hit AS (
    SELECT DISTINCT job_id FROM job_events WHERE event = 'xid_failure'
), per_cluster AS (
    SELECT p.cluster, any_value(p.gpu_model) AS gpu_model,
           sum(p.gpus * p.elapsed_s) / 86400 AS gpu_days,
           count(*) FILTER (WHERE h.job_id IS NOT NULL OR p.state = 'NODE_FAIL') AS interruptions
    FROM placed AS p LEFT JOIN hit AS h USING (job_id)
    GROUP BY p.cluster
), mtbf AS (
    SELECT *, CASE WHEN interruptions > 0 THEN gpu_mtbf_h(interruptions, 1, gpu_days * 24) END AS gpu_mtbf
    FROM per_cluster
)
SELECT cluster, gpu_model,
       round(gpu_days, 1) AS gpu_days,
       interruptions,
       round(1000 * interruptions / gpu_days, 3) AS per_1k_gpu_days,
       round(gpu_mtbf, 0) AS gpu_mtbf_h,
       round(cluster_mtbf_h(gpu_mtbf, $job_gpus), 2) AS job_mtbf_h
FROM mtbf
ORDER BY per_1k_gpu_days DESC, cluster
