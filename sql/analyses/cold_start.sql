-- cold_start: Model-loading (cold start) latencies from the Alibaba GenAI trace against a sub-200 ms start claim.
--
-- Every row of model_load_latency is one container loading its base model. The claim that
-- serverless GPU inference starts in under $target_ms is tested against the distribution, and
-- scale_out_s() turns the median and p99 into the time to start $instances replicas when
-- $parallel_starts can load at once.
--
-- Parameters:
--   $target_ms            DOUBLE = 200     the claimed cold start, ms
--   $instances            INTEGER = 100    replicas to start for a burst
--   $parallel_starts      INTEGER = 16     replicas that can load at once
-- Columns:
--   cluster               trace the latencies come from
--   loads                 model loads, count
--   containers            distinct containers, count
--   p50_ms                median load latency, ms
--   p90_ms                90th percentile, ms
--   p99_ms                99th percentile, ms
--   max_ms                slowest load, ms
--   under_target_pct      loads faster than $target_ms, %
--   p50_over_target       median / $target_ms, times
--   scale_out_p50_s       time to start $instances replicas at the median latency, s
--   scale_out_p99_s       the same at the p99 latency, s
WITH stats AS (
    SELECT cluster, count(*) AS loads, count(DISTINCT container) AS containers,
           median(latency_ms) AS p50, quantile_cont(latency_ms, 0.9) AS p90,
           quantile_cont(latency_ms, 0.99) AS p99, max(latency_ms) AS mx,
           avg(CASE WHEN latency_ms < $target_ms THEN 1.0 ELSE 0.0 END) AS under
    FROM model_load_latency GROUP BY cluster
)
SELECT cluster, loads, containers,
       round(p50, 0) AS p50_ms, round(p90, 0) AS p90_ms, round(p99, 0) AS p99_ms,
       round(mx, 0) AS max_ms,
       round(100 * under, 2) AS under_target_pct,
       round(p50 / $target_ms, 1) AS p50_over_target,
       round(scale_out_s($instances, p50 / 1e3, $parallel_starts), 1) AS scale_out_p50_s,
       round(scale_out_s($instances, p99 / 1e3, $parallel_starts), 1) AS scale_out_p99_s
FROM stats
ORDER BY cluster
