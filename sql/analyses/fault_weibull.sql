-- fault_weibull: A right-censored Weibull fit of the uptime between faults, per class.
--
-- The uptimes of a class are, per node, the time from the start of observation (the first
-- fault of node_faults) or from the end of the node's previous fault of that class to its next
-- one — a failure — and from its last repair to the end of observation — censored, as is the
-- whole window for every node of the fleet that never failed so (nodes as fault_rates counts
-- them). The maximum-likelihood shape k and scale λ of a Weibull with right censoring: for a
-- given k the best λ^k is Σ t^k / failures, so the log-likelihood in k alone,
--   ℓ(k) = d·ln k − d·ln(Σ t^k / d) + (k − 1)·Σ_failures ln t − d,
-- is maximised over k on a grid (0.05 to 5 by 0.01), then again by 0.0001 around the best:
-- exact to 1e-4 where the maximum is inside the grid (warehouse/faults/weibull.py solves the
-- same equation in numpy; tests hold the two to known distributions). k < 1: the hazard falls
-- with uptime (faults cluster: a repaired node fails again soon); k = 1: a constant rate; k > 1:
-- wear-out. Uptimes shorter than a minute count as a minute.
--
-- Parameters:
--   $fleet_nodes              INTEGER = 0   nodes in the fleet (0: as fleet_fault_rate counts them)
-- Columns:
--   class                     what failed ('all': a fault of any class ends the uptime)
--   failures                  uptimes that ended in a fault, count
--   censored                  uptimes still running at the end of observation, count
--   shape                     Weibull shape k
--   scale_h                   Weibull scale λ, h
--   mean_h                    mean uptime λ·Γ(1 + 1/k), h
WITH bounds AS (
    SELECT min(start_at) AS t0, max(coalesce(end_at, start_at)) AS t1 FROM node_faults
), fleet AS (
    SELECT CASE WHEN $fleet_nodes > 0 THEN $fleet_nodes ELSE nodes END AS nodes
    FROM fleet_fault_rate
), classed AS (
    SELECT node, coalesce(class, 'unclassed') AS class, start_at, end_at FROM node_faults
    UNION ALL
    SELECT node, 'all', start_at, end_at FROM node_faults
), ordered AS (
    SELECT class, node, start_at, end_at,
           max(end_at) OVER (PARTITION BY class, node ORDER BY start_at
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS up_from,
           row_number() OVER (PARTITION BY class, node ORDER BY start_at DESC) AS from_last
    FROM classed
), uptimes AS (
    -- up to each fault that began while the node was up
    SELECT o.class, greatest(epoch(o.start_at - coalesce(o.up_from, b.t0)) / 3600, 1 / 60)
               AS t_h, true AS failed, 1 AS n
    FROM ordered AS o, bounds AS b
    WHERE o.up_from IS NULL OR o.start_at > o.up_from
    UNION ALL
    -- after each node's last repair, to the end of observation
    SELECT o.class, greatest(epoch(b.t1 - o.end_at) / 3600, 1 / 60), false, 1
    FROM ordered AS o, bounds AS b
    WHERE o.from_last = 1 AND o.end_at IS NOT NULL AND o.end_at < b.t1
    UNION ALL
    -- the fleet's nodes that never failed so: the whole window
    SELECT c.class, epoch(any_value(b.t1) - any_value(b.t0)) / 3600, false,
           any_value(f.nodes) - count(DISTINCT c.node)
    FROM classed AS c, bounds AS b, fleet AS f
    GROUP BY c.class
), stats AS (
    SELECT class, sum(n) FILTER (WHERE failed) AS d,
           sum(n * ln(t_h)) FILTER (WHERE failed) AS sum_ln,
           sum(n) FILTER (WHERE NOT failed) AS censored
    FROM uptimes
    WHERE n > 0
    GROUP BY class
    HAVING sum(n) FILTER (WHERE failed) > 0
), coarse AS (
    SELECT s.class, g.range / 100.0 AS k FROM stats AS s, range(5, 501) AS g
), coarse_fit AS (
    SELECT c.class, arg_max(c.k, s.d * ln(c.k) - s.d * ln(c.sum_t / s.d) + (c.k - 1) * s.sum_ln)
               AS k
    FROM (SELECT c.class, c.k, sum(u.n * pow(u.t_h, c.k)) AS sum_t
          FROM coarse AS c JOIN uptimes AS u USING (class)
          GROUP BY c.class, c.k) AS c
    JOIN stats AS s USING (class)
    GROUP BY c.class
), fine AS (
    SELECT f.class, f.k + (g.range - 100) / 10000.0 AS k
    FROM coarse_fit AS f, range(0, 201) AS g
    WHERE f.k + (g.range - 100) / 10000.0 > 0
), fine_fit AS (
    SELECT c.class,
           arg_max(c.k, s.d * ln(c.k) - s.d * ln(c.sum_t / s.d) + (c.k - 1) * s.sum_ln) AS k,
           arg_max(c.sum_t, s.d * ln(c.k) - s.d * ln(c.sum_t / s.d) + (c.k - 1) * s.sum_ln)
               AS sum_t
    FROM (SELECT c.class, c.k, sum(u.n * pow(u.t_h, c.k)) AS sum_t
          FROM fine AS c JOIN uptimes AS u USING (class)
          GROUP BY c.class, c.k) AS c
    JOIN stats AS s USING (class)
    GROUP BY c.class
)
SELECT s.class,
       s.d::BIGINT AS failures,
       coalesce(s.censored, 0)::BIGINT AS censored,
       round(f.k, 4) AS shape,
       round(pow(f.sum_t / s.d, 1 / f.k), 1) AS scale_h,
       round(pow(f.sum_t / s.d, 1 / f.k) * gamma(1 + 1 / f.k), 1) AS mean_h
FROM stats AS s JOIN fine_fit AS f USING (class)
ORDER BY s.class = 'all' DESC, s.d DESC, s.class
