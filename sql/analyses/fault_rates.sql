-- fault_rates: Faults per 1,000 node-days by class, with each class's node MTBF and median repair.
--
-- From node_faults (`wanka ingest faults`). Exposure is the fleet's nodes × the days the faults
-- span (first start to last event), as fleet_fault_rate counts it: nodes from $fleet_nodes, else
-- risk_settings' fleet_nodes, else the inventory, else the nodes the faults name — a trace that
-- lists only faulted servers (InfiniteHBD: 231 of 400) needs the fleet's size given. Calibration:
-- the InfiniteHBD trace gives 4.23 faults per 1,000 node-days over 400 servers; Llama 3 saw 3.79
-- interruptions per 1,000 node-days. The row 'all' is the fleet.
--
-- Parameters:
--   $fleet_nodes              INTEGER = 0   nodes in the fleet (0: as fleet_fault_rate counts them)
-- Columns:
--   class                     what failed (node_faults.class; 'all' for every fault)
--   faults                    faults of the class, count
--   nodes_hit                 nodes with at least one, count
--   node_days                 the fleet's node-days observed, node-d
--   per_1k_node_days          faults per 1,000 node-days
--   node_mtbf_h               mean time between faults of this class on one node, h
--   median_repair_h           median time from a fault's start to its end, h (closed faults)
WITH fleet AS (
    SELECT CASE WHEN $fleet_nodes > 0 THEN $fleet_nodes ELSE nodes END * days AS node_days
    FROM fleet_fault_rate
), faults AS (
    SELECT coalesce(class, 'unclassed') AS class, node,
           epoch(end_at - start_at) / 3600 AS repair_h
    FROM node_faults
), by_class AS (
    SELECT class, count(*) AS faults, count(DISTINCT node) AS nodes_hit,
           median(repair_h) AS median_repair_h
    FROM faults GROUP BY class
    UNION ALL
    SELECT 'all', count(*), count(DISTINCT node), median(repair_h) FROM faults
)
SELECT b.class, b.faults, b.nodes_hit,
       round(f.node_days, 1) AS node_days,
       round(1000 * b.faults / f.node_days, 3) AS per_1k_node_days,
       round(24 * f.node_days / b.faults, 0) AS node_mtbf_h,
       round(b.median_repair_h, 1) AS median_repair_h
FROM by_class AS b, fleet AS f
WHERE b.faults > 0 AND f.node_days > 0
ORDER BY b.class = 'all' DESC, b.faults DESC, b.class
