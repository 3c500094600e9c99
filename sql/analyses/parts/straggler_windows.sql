-- The straggler rule, shared by the analyses stragglers and step_time_changes: CTEs to include in
-- a WITH list after a CTE `straggler_jobs(job_id)` naming the jobs to judge. Per job and
-- 5-minute window, each GPU's mean SM activity (attributed through job_gpus) against the job's
-- median; the z-score's spread is the job's own, pooled over its windows. A window where a GPU
-- ran no kernel (mean SM activity 0) is left out: the job left that GPU idle (idle_gpu_jobs),
-- it is not slow. `slow` holds the GPU windows that count ($min_gpus, $z, $min_slower_pct),
-- numbered so that a run of windows in a row shares `run`.
activity AS (
    SELECT j.job_id, m.host, m.gpu,
           time_bucket(INTERVAL '5 minutes', m.ts) AS w, avg(m.value) AS v
    FROM gpu_metrics AS m
    JOIN job_gpus AS j ON j.host = m.host AND j.gpu = m.gpu
        AND m.ts >= j.start_at AND (j.end_at IS NULL OR m.ts < j.end_at)
    WHERE m.metric = 'DCGM_FI_PROF_SM_ACTIVE' AND NOT isnan(m.value)
        AND j.job_id IN (SELECT job_id FROM straggler_jobs)
    GROUP BY ALL
    HAVING avg(m.value) > 0
), peers AS (
    SELECT *, median(v) OVER job_w AS med, count(*) OVER job_w AS n
    FROM activity WINDOW job_w AS (PARTITION BY job_id, w)
), spread AS (
    SELECT *, median(abs(v - med)) OVER (PARTITION BY job_id) AS mad FROM peers
    WHERE n >= $min_gpus
), judged AS (
    SELECT *, (v - med) / nullif(1.4826 * mad, 0) AS z, 100 * (med - v) / nullif(med, 0) AS slower
    FROM spread
), slow AS (  -- a run of windows in a row: the window minus its rank is the same along it
    SELECT *, CAST(epoch(w) / 300 AS BIGINT)
                  - row_number() OVER (PARTITION BY job_id, host, gpu ORDER BY w) AS run
    FROM judged
    WHERE slower >= $min_slower_pct AND (z < -$z OR (mad = 0 AND v < med))
)
