-- trace_summary: Per cluster, the summary figures GPU-cluster trace papers publish (Helios, Acme): job counts, run and queue times, GPU sizes, completion rates, GPU time by state.
--
-- Column names follow the published summaries (helios_cluster_summary.csv, Acme's
-- cluster_summary.csv) so that a trace loaded here can be compared with its published row.
-- GPU jobs are jobs with gpus > 0; run time is elapsed_s; queue time start_at − submit_at
-- (NULL where the trace has no start times); rates are shares of GPU jobs by final state.
--
-- Parameters:
--   $cluster              VARCHAR = ''   only this cluster ('' = every cluster)
-- Columns:
--   cluster               cluster ('demo' for the simulated Slurm jobs)
--   job_num               jobs, count
--   gpu_job_num           jobs using GPUs, count
--   avg_run_time_gpu      mean run time of GPU jobs, s
--   med_run_time_gpu      median run time of GPU jobs, s
--   max_run_time_gpu      longest GPU job, s
--   avg_que_time_gpu      mean queue time of GPU jobs, s
--   med_que_time_gpu      median queue time of GPU jobs, s
--   avg_gpu_num           mean GPUs per GPU job
--   med_gpu_num           median GPUs per GPU job
--   max_gpu               largest GPU job, GPUs
--   complete_rate_gpu     share of GPU jobs COMPLETED, fraction
--   cancel_rate_gpu       share CANCELLED, fraction
--   fail_rate_gpu         share FAILED (incl. NODE_FAIL, TIMEOUT, OUT_OF_MEMORY), fraction
--   total_gpu_time        GPU time of all GPU jobs, GPU-s
--   complete_gpu_time     GPU time of completed jobs, GPU-s
--   cancel_gpu_time       GPU time of cancelled jobs, GPU-s
--   fail_gpu_time         GPU time of failed jobs, GPU-s
WITH j AS (
    SELECT coalesce(cluster, 'demo') AS cluster, gpus, elapsed_s,
           epoch(start_at - submit_at) AS queue_s,
           coalesce(gpus, 0) * coalesce(elapsed_s, 0) AS gpu_s,
           CASE WHEN state = 'COMPLETED' THEN 'complete' WHEN state = 'CANCELLED' THEN 'cancel'
                WHEN state IN ('FAILED', 'NODE_FAIL', 'TIMEOUT', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE')
                THEN 'fail' END AS outcome,
           state IS NOT NULL AS has_state
    FROM jobs
    WHERE $cluster = '' OR coalesce(cluster, 'demo') = $cluster
)
SELECT cluster,
       count(*) AS job_num,
       count(*) FILTER (WHERE gpus > 0) AS gpu_job_num,
       round(avg(elapsed_s) FILTER (WHERE gpus > 0), 3) AS avg_run_time_gpu,
       median(elapsed_s) FILTER (WHERE gpus > 0) AS med_run_time_gpu,
       max(elapsed_s) FILTER (WHERE gpus > 0) AS max_run_time_gpu,
       round(avg(queue_s) FILTER (WHERE gpus > 0), 3) AS avg_que_time_gpu,
       median(queue_s) FILTER (WHERE gpus > 0) AS med_que_time_gpu,
       round(avg(gpus) FILTER (WHERE gpus > 0), 3) AS avg_gpu_num,
       median(gpus) FILTER (WHERE gpus > 0) AS med_gpu_num,
       max(gpus) AS max_gpu,
       round(count(*) FILTER (WHERE gpus > 0 AND outcome = 'complete')
             / nullif(count(*) FILTER (WHERE gpus > 0 AND has_state), 0), 3) AS complete_rate_gpu,
       round(count(*) FILTER (WHERE gpus > 0 AND outcome = 'cancel')
             / nullif(count(*) FILTER (WHERE gpus > 0 AND has_state), 0), 3) AS cancel_rate_gpu,
       round(count(*) FILTER (WHERE gpus > 0 AND outcome = 'fail')
             / nullif(count(*) FILTER (WHERE gpus > 0 AND has_state), 0), 3) AS fail_rate_gpu,
       sum(gpu_s) AS total_gpu_time,
       sum(gpu_s) FILTER (WHERE outcome = 'complete') AS complete_gpu_time,
       sum(gpu_s) FILTER (WHERE outcome = 'cancel') AS cancel_gpu_time,
       sum(gpu_s) FILTER (WHERE outcome = 'fail') AS fail_gpu_time
FROM j
GROUP BY cluster
ORDER BY cluster
