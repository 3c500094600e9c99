-- step_time_changes: jobs whose training step time grew and stayed up: job, host, GPU, how much slower, since when.
--
-- A training loop logs its step time: job_events rows with event 'step_time', value = the mean
-- seconds per step over the logging interval ending at ts (detail: the steps, 'steps 1201-1350').
-- A job in lock step runs at its slowest GPU's pace, so one slow GPU (or link, or host) shows
-- first as a longer step. Per job, the baseline is the median of its first $baseline_windows
-- logged intervals: a fixed reference, so a slowdown that lasts hours keeps its size and its
-- start (a rolling median of the preceding hour would absorb a lasting step within half an hour
-- and report it shrunk and cut short), and a median, so that one slow warm-up interval (compile,
-- data loader) does not set it. Later intervals at least $min_slower_pct above the baseline, for
-- at least $min_windows logged intervals in a row, are a change; intervals in a row are the
-- job's consecutive log lines, whatever their cadence (every N seconds or every N steps). A job
-- that got faster is not flagged; one that started slow has a slow baseline. A checkpoint save
-- lengthens the mean of the interval it falls in: one interval, rarely two, never $min_windows.
-- host and gpu name the GPU that holds the job back when telemetry shows one: a straggler of the
-- same job whose run overlaps the change, by the rule of sql/analyses/stragglers.sql with the
-- same $min_windows, $min_slower_pct, $z and $min_gpus (the largest overlap, then the slowest);
-- NULL when none does. job_gpus must name the job as job_events does (Slurm's JobID).
--
-- Parameters:
--   $baseline_windows     INTEGER = 3     a job's first logged intervals whose median is its baseline
--   $min_windows          INTEGER = 3     logged intervals in a row above the baseline (and 5-minute windows for the GPU)
--   $min_slower_pct       DOUBLE = 5      at least this far above the baseline, % (and below the job's median SM activity for the GPU)
--   $z                    DOUBLE = 3.5    the GPU: robust z-score below its job's median SM activity that counts
--   $min_gpus             INTEGER = 4     the GPU: jobs with fewer GPUs in a window are not judged
-- Columns:
--   job_id                job (as job_events names it)
--   host                  host of the GPU holding the job back (NULL: no straggler in telemetry)
--   gpu                   GPU index on the host (NULL: none)
--   baseline_step_s       median step time of the job's first $baseline_windows intervals, s
--   step_s                median step time over the change, s
--   slower_pct            step_s above baseline_step_s, %
--   windows               logged intervals in a row, count
--   since                 start of the first slow interval (the log line before it)
--   until                 end of the last slow interval
--   gpu_slower_pct        the GPU's SM activity below its job's median, median over its run, % (NULL: none)
WITH steps AS (
    SELECT job_id, ts, value AS step_s,
           row_number() OVER (PARTITION BY job_id ORDER BY ts) AS i,
           lag(ts) OVER (PARTITION BY job_id ORDER BY ts) AS prev_ts
    FROM job_events
    WHERE event = 'step_time' AND isfinite(value) AND value > 0
), baseline AS (  -- only jobs that logged all of their baseline intervals
    SELECT job_id, median(step_s) AS base_s
    FROM steps
    WHERE i <= $baseline_windows
    GROUP BY job_id
    HAVING count(*) = $baseline_windows
), step_runs AS (  -- intervals in a row: an interval's number minus its rank is the same along a run
    SELECT s.*, b.base_s, s.i - row_number() OVER (PARTITION BY s.job_id ORDER BY s.ts) AS step_run
    FROM steps AS s JOIN baseline AS b ON b.job_id = s.job_id
    WHERE s.i > $baseline_windows AND 100 * (s.step_s - b.base_s) / b.base_s >= $min_slower_pct
), changes AS (
    SELECT job_id, min(base_s) AS base_s, median(step_s) AS step_s, count(*) AS windows,
           min(prev_ts) AS since, max(ts) AS until
    FROM step_runs
    GROUP BY job_id, step_run
    HAVING count(*) >= $min_windows
), straggler_jobs AS (
    SELECT job_id FROM changes
), @include(parts/straggler_windows.sql), stragglers AS (
    SELECT job_id, host, gpu, median(slower) AS slower_pct,
           min(w) AS since, max(w) + INTERVAL '5 minutes' AS until
    FROM slow
    GROUP BY job_id, host, gpu, run
    HAVING count(*) >= $min_windows
), named AS (  -- per change, the straggler overlapping it most
    SELECT c.*, g.host, g.gpu, g.slower_pct AS gpu_slower_pct,
           row_number() OVER (
               PARTITION BY c.job_id, c.since
               ORDER BY epoch(least(c.until, g.until)) - epoch(greatest(c.since, g.since)) DESC
                            NULLS LAST,
                        g.slower_pct DESC, g.host, g.gpu) AS pick
    FROM changes AS c
    LEFT JOIN stragglers AS g ON g.job_id = c.job_id AND g.since < c.until AND g.until > c.since
)
SELECT job_id, host, gpu,
       round(base_s, 4) AS baseline_step_s,
       round(step_s, 4) AS step_s,
       round(100 * (step_s - base_s) / base_s, 1) AS slower_pct,
       windows, since, until,
       round(gpu_slower_pct, 1) AS gpu_slower_pct
FROM named
WHERE pick = 1
ORDER BY slower_pct DESC, job_id, since
