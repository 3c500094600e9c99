-- fault_repair_times: Repair times and the uptime between faults, as distributions per class.
--
-- A repair is a closed fault of node_faults, from its start to its end. The uptime after a fault
-- is the time from its end to the same node's next fault of any class (a lemon server shows
-- here as a short p10); the last fault of a node has none. The means beside the medians show how
-- long the tails are (InfiniteHBD: median repair 16.8 h for a GPU, 351 h for a power supply).
--
-- Columns:
--   class                     what failed ('all' for every fault)
--   repairs                   closed faults, count
--   repair_p10_h              10th percentile of the repair time, h
--   repair_p50_h              median repair time, h
--   repair_p90_h              90th percentile of the repair time, h
--   repair_mean_h             mean repair time, h
--   uptimes                   faults followed by another fault of the node, count
--   uptime_p10_h              10th percentile of the uptime to the node's next fault, h
--   uptime_p50_h              median uptime to the node's next fault, h
--   uptime_mean_h             mean uptime to the node's next fault, h
WITH ordered AS (
    SELECT coalesce(class, 'unclassed') AS class,
           epoch(end_at - start_at) / 3600 AS repair_h,
           epoch(lead(start_at) OVER (PARTITION BY node ORDER BY start_at) - end_at) / 3600
               AS uptime_h
    FROM node_faults
), classes AS (
    SELECT class, repair_h, uptime_h FROM ordered
    UNION ALL
    SELECT 'all', repair_h, uptime_h FROM ordered
)
SELECT class,
       count(repair_h) AS repairs,
       round(quantile_cont(repair_h, 0.1), 1) AS repair_p10_h,
       round(quantile_cont(repair_h, 0.5), 1) AS repair_p50_h,
       round(quantile_cont(repair_h, 0.9), 1) AS repair_p90_h,
       round(avg(repair_h), 1) AS repair_mean_h,
       count(uptime_h) FILTER (WHERE uptime_h >= 0) AS uptimes,
       round(quantile_cont(uptime_h, 0.1) FILTER (WHERE uptime_h >= 0), 1) AS uptime_p10_h,
       round(quantile_cont(uptime_h, 0.5) FILTER (WHERE uptime_h >= 0), 1) AS uptime_p50_h,
       round(avg(uptime_h) FILTER (WHERE uptime_h >= 0), 1) AS uptime_mean_h
FROM classes
GROUP BY class
ORDER BY class = 'all' DESC, repairs DESC, class
