-- checkpoint_advice: How often each running job should checkpoint, at the rate its nodes fail.
--
-- Ties the checkpoint models to what the cluster does: a running job's interruption rate is
-- the fleet's measured rate (fleet_fault_rate: node_faults, else Llama 3's 3.79 per 1,000
-- node-days) for each of its nodes, times the node's rate ratio against the fleet where
-- node_risk has one (a node with a history of faults counts for more). From the job's MTBF,
-- Young's and Daly's optimum intervals for a checkpoint that takes $checkpoint_s, the share of
-- time lost at Daly's interval, and the chance of an interruption in the next $hours.
--
-- Parameters:
--   $checkpoint_s             DOUBLE = 60    time to write one checkpoint, s
--   $restart_s                DOUBLE = 600   time to restart after an interruption, s
--   $hours                    DOUBLE = 24    horizon of the interruption risk, h
-- Columns:
--   job_id                    the running job
--   gpus                      GPUs it holds
--   nodes                     nodes it runs on
--   risk_weight               Σ over its nodes of the node's rate ratio (1 for a node without one)
--   job_mtbf_h                mean time between interruptions of this job, h
--   p_interrupt               chance of at least one interruption in the next $hours
--   young_interval_s          Young's optimum compute time between checkpoints, s
--   daly_interval_s           Daly's optimum compute time between checkpoints, s
--   waste_pct                 time lost to checkpoints, rework and restarts at Daly's interval, %
WITH running AS (
    SELECT job_id, gpus, node_list FROM jobs
    WHERE state = 'RUNNING' AND gpus > 0 AND len(node_list) > 0
), weighted AS (
    SELECT r.job_id, any_value(r.gpus) AS gpus, count(*) AS nodes,
           sum(coalesce(nr.history_ratio, 1)) AS risk_weight
    FROM running AS r, unnest(r.node_list) AS n(node)
    LEFT JOIN node_risk AS nr ON nr.node = n.node
    GROUP BY r.job_id
), rated AS (
    -- interruptions per hour: the fleet's per-GPU rate over the job's GPUs, weighted by its nodes
    SELECT w.*, f.faults_per_1k_node_days / 1000 / 24 / 8 * w.gpus * w.risk_weight / w.nodes
               AS per_h
    FROM weighted AS w, fleet_fault_rate AS f
)
SELECT job_id, gpus, nodes,
       round(risk_weight, 2) AS risk_weight,
       round(1 / per_h, 1) AS job_mtbf_h,
       round(1 - exp(-per_h * $hours), 3) AS p_interrupt,
       round(young_interval_s($checkpoint_s, 3600 / per_h), 0) AS young_interval_s,
       round(daly_interval_s($checkpoint_s, 3600 / per_h), 0) AS daly_interval_s,
       round(100 * checkpoint_waste_fraction(daly_interval_s($checkpoint_s, 3600 / per_h),
                                             $checkpoint_s, 3600 / per_h, $restart_s), 2)
           AS waste_pct
FROM rated
WHERE per_h > 0
ORDER BY per_h DESC, job_id
