-- perf_per_watt: Dense BF16 TFLOPS per watt by GPU model: at TDP (datasheet) and at the power measured under load.
--
-- Datasheet efficiency is bf16_tflops / tdp_w. Measured, the board power of GPUs of that
-- model in gpu_metrics while busy (DCGM_FI_DEV_GPU_UTIL ≥ $busy_util_pct in the same scrape)
-- replaces the TDP: real GPUs under full load draw ≈ 0.9 of TDP, so this is usually better.
--
-- Parameters:
--   $busy_util_pct        DOUBLE = 90     utilisation that counts as under load, %
-- Columns:
--   model                 GPU model
--   vendor                vendor
--   bf16_tflops           dense BF16 TFLOPS
--   tdp_w                 board power limit, W
--   tflops_per_w_tdp      TFLOPS per W at TDP
--   busy_power_w          mean measured power while busy, W (NULL: no telemetry)
--   tflops_per_w_measured TFLOPS per W at that power
--   busy_samples          samples behind busy_power_w, count
WITH busy AS (
    SELECT p.model, avg(p.value) AS watts, count(*) AS samples
    FROM gpu_metrics AS p
    JOIN gpu_metrics AS u
      ON u.ts = p.ts AND u.host = p.host AND u.gpu = p.gpu
     AND u.metric = 'DCGM_FI_DEV_GPU_UTIL' AND u.value >= $busy_util_pct
    WHERE p.metric = 'DCGM_FI_DEV_POWER_USAGE'
    GROUP BY p.model
)
SELECT g.model, g.vendor, g.bf16_tflops, g.tdp_w,
       round(perf_per_watt(g.bf16_tflops, g.tdp_w), 3) AS tflops_per_w_tdp,
       round(b.watts, 1) AS busy_power_w,
       round(perf_per_watt(g.bf16_tflops, b.watts), 3) AS tflops_per_w_measured,
       coalesce(b.samples, 0) AS busy_samples
FROM gpu_models AS g LEFT JOIN busy AS b USING (model)
ORDER BY tflops_per_w_tdp DESC, g.model
