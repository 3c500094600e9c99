-- stragglers: GPUs slower than the other GPUs of their own job, window after window: job, host, GPU, how much slower, since when.
--
-- A multi-GPU job runs in lock step, so one slow GPU (a bad HBM stack, a throttled or degraded
-- part, a noisy neighbour) slows all of it; ByteDance's MegaScale and Microsoft's SuperBench
-- find them by comparing a job's GPUs with each other, not with a fixed bar. Per job and
-- 5-minute window, each GPU's mean SM activity (DCGM_FI_PROF_SM_ACTIVE, attributed
-- through job_gpus) against the job's median: a robust z-score below -$z and at least
-- $min_slower_pct below the median, in jobs with at least $min_gpus GPUs in the window. The
-- z-score's spread is the job's own, pooled over its windows (1.4826 × the MAD of every GPU's
-- distance from its window's median): one window's 4–8 peers are too few to measure it, and a
-- job whose GPUs differ by chance (inference replicas taking uneven traffic) is not a lock-step
-- job held back by one GPU. A straggler is a run of at least $min_windows such windows in a row.
-- A GPU window with no SM activity at all is not judged: the job left that GPU idle
-- (idle_gpu_jobs lists it), it did not slow down.
--
-- Parameters:
--   $min_windows          INTEGER = 3     windows in a row below the job's peers
--   $z                    DOUBLE = 3.5    robust z-score below the job's median that counts
--   $min_slower_pct       DOUBLE = 5      and at least this far below the median, %
--   $min_gpus             INTEGER = 4     jobs with fewer GPUs in a window are not judged
-- Columns:
--   job_id                job (a pod: namespace/pod)
--   host                  host of the slow GPU
--   gpu                   GPU index on the host
--   slower_pct            how far below the job's median SM activity, median over the run, %
--   z                     robust z-score, median over the run
--   windows               windows in a row, count
--   since                 start of the first slow window
--   until                 end of the last slow window
--   sm_active             the GPU's mean SM activity over the run (0-1)
--   job_median            the job's median SM activity over the run (0-1)
--   job_gpus              GPUs of the job in those windows, count
WITH straggler_jobs AS (
    SELECT DISTINCT job_id FROM job_gpus
), @include(parts/straggler_windows.sql)
SELECT job_id, host, gpu,
       round(median(slower), 1) AS slower_pct,
       round(median(z), 1) AS z,
       count(*) AS windows,
       min(w) AS since,
       max(w) + INTERVAL '5 minutes' AS until,
       round(avg(v), 4) AS sm_active,
       round(median(med), 4) AS job_median,
       max(n) AS job_gpus
FROM slow
GROUP BY job_id, host, gpu, run
HAVING count(*) >= $min_windows
ORDER BY slower_pct DESC, job_id, host, gpu
