-- duty_cycle: GPU duty cycle of serving containers over time (Alibaba GenAI trace): how busy inference GPUs really are.
--
-- gpu_duty_cycle holds the share of time a kernel ran on each container's GPU. Per time
-- bucket: containers reporting, mean and median duty cycle, and the share of containers whose
-- GPU idled (below $idle_pct) — GPUs held but not used.
--
-- Parameters:
--   $bucket               VARCHAR = '1 hour'   time bucket, a DuckDB interval
--   $idle_pct             DOUBLE = 1           duty cycle below which a GPU counts as idle, %
-- Columns:
--   cluster               trace
--   bucket_start          start of the bucket, UTC
--   containers            containers reporting, count
--   mean_duty_pct         mean duty cycle, %
--   p50_duty_pct          median duty cycle, %
--   idle_share_pct        samples below $idle_pct, %
SELECT cluster,
       time_bucket(CAST($bucket AS INTERVAL), ts) AS bucket_start,
       count(DISTINCT container) AS containers,
       round(avg(duty_cycle_pct), 2) AS mean_duty_pct,
       round(median(duty_cycle_pct), 2) AS p50_duty_pct,
       round(100 * avg(CASE WHEN duty_cycle_pct < $idle_pct THEN 1.0 ELSE 0.0 END), 1) AS idle_share_pct
FROM gpu_duty_cycle
GROUP BY ALL
ORDER BY cluster, bucket_start
