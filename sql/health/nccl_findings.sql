-- nccl_findings: hosts whose nccl-tests bus bandwidth is low in every probe run of a sweep, against the fleet's own median for the same hardware.
--
-- SuperBench-style: the same collective runs on every host again and again (the simulator's
-- probes: each host in a 2-node all_reduce_perf with each of two ring neighbours every 15
-- minutes, warehouse/simulate/nccl.py), and a result is judged against the fleet's, not a
-- datasheet. The baseline of a (collective, gpu_model, ranks, size_bytes, placement) is the
-- fleet's median over hosts and sweeps of each host's best busbw in runs with that key and the
-- same network: the weakest host's NICs as `nodes` and `nic_models` give them (node_nic_gbs:
-- line rate capped by the PCIe slot), so a rack of Gen4 slots or a 4-NIC cluster is compared
-- with its like rather than flagged for how it was built (interconnect_balance shows those);
-- runs of hosts `nodes` does not know are compared with each other. A host's best run, not every
-- run: a bad host drags down the runs of both its partners too, so in a small cluster (4 hosts:
-- half the runs) it would drag the median of runs down with them; each of its partners still
-- has a good run, and the median of hosts moves only by the bad host itself. Only rows with
-- ran_at, collective, gpu_model, ranks and hosts, of 64 MiB and more, count.
--
-- A run is low when its busbw at its largest size (the median of its placements) is more than
-- the threshold of wanka.health_rules' rule 'nccl_busbw' (0.25: 25 %) below the baseline; with no
-- such rule there are no findings. A low 2-host run says one of its hosts is at fault. Per sweep
-- (ran_at) a host is flagged when it took part in at least 2 runs with different partners, all
-- of them low, and at least one of those partners ran fine in another run of the sweep: the
-- fault is the host's, not the partners'. A host low in a sweep in which it ran once is not
-- flagged (the fault could be the partner's); neither is a healthy host between two bad ones
-- (none of its partners ran fine).
--
-- Columns:
--   host            the host flagged
--   ran_at          the sweep
--   runs            the host's runs in the sweep, count
--   low_runs        of which low (all of them), count
--   busbw_gbs       median of those runs' busbw at their largest size, GB/s
--   baseline_gbs    median of their baselines, GB/s
--   ratio           busbw_gbs / baseline_gbs
--   evidence        up to 5 {ts, kind 'nccl_busbw', code NULL, detail}, lowest ratio first
WITH rule AS (
    SELECT threshold FROM wanka.health_rules WHERE rule = 'nccl_busbw'
), links AS (  -- each known host's network, GB/s per direction
    SELECT n.host,
           node_nic_gbs(n.nic_count, k.line_rate_gbps, least(n.pcie_gen, k.pcie_gen),
                        least(n.pcie_lanes, k.pcie_lanes)) AS gbs
    FROM nodes AS n JOIN nic_models AS k ON k.model = n.nic_model
), results AS (
    SELECT run_id, ran_at, collective, ranks, gpu_model, size_bytes, placement, busbw_gbs, hosts
    FROM nccl_results
    WHERE ran_at IS NOT NULL AND collective IS NOT NULL AND gpu_model IS NOT NULL
      AND ranks IS NOT NULL AND size_bytes >= 64 * 1048576 AND busbw_gbs IS NOT NULL
      AND len(hosts) > 0
), run_sizes AS (  -- one row per run: its hosts and its largest size
    SELECT run_id, ran_at, list_distinct(any_value(hosts)) AS hosts, max(size_bytes) AS top
    FROM results GROUP BY run_id, ran_at
), run_links AS (  -- a run's weakest host's network
    SELECT r.run_id, r.ran_at, min(l.gbs) AS gbs
    FROM run_sizes AS r CROSS JOIN unnest(r.hosts) AS u(host) JOIN links AS l ON l.host = u.host
    GROUP BY r.run_id, r.ran_at
), runs AS (  -- 0: nodes knows none of its hosts
    SELECT r.*, coalesce(l.gbs, 0) AS link_gbs
    FROM run_sizes AS r LEFT JOIN run_links AS l USING (run_id, ran_at)
), keyed AS (  -- the rows of the sizes runs are judged at
    SELECT x.*, r.link_gbs, r.top, r.hosts AS run_hosts
    FROM results AS x JOIN runs AS r USING (run_id, ran_at)
    WHERE x.size_bytes IN (SELECT top FROM runs)
), best AS (  -- each host's best run of the key and sweep
    SELECT k.collective, k.gpu_model, k.ranks, k.size_bytes, k.placement, k.link_gbs, k.ran_at,
           u.host, max(k.busbw_gbs) AS busbw
    FROM keyed AS k CROSS JOIN unnest(k.run_hosts) AS u(host)
    GROUP BY ALL
), baselines AS (
    SELECT collective, gpu_model, ranks, size_bytes, placement, link_gbs,
           median(busbw) AS baseline
    FROM best GROUP BY ALL
), judged AS (  -- each run at its largest size against the baseline
    SELECT k.run_id, k.ran_at, k.run_hosts AS hosts, k.collective, k.ranks, k.size_bytes,
           median(k.busbw_gbs) AS busbw, median(b.baseline) AS baseline
    FROM keyed AS k
    JOIN baselines AS b USING (collective, gpu_model, ranks, size_bytes, placement, link_gbs)
    WHERE k.size_bytes = k.top
    GROUP BY ALL
), sides AS (  -- each 2-host run once per host, the other one its partner
    SELECT j.*, j.hosts[t.i] AS host, j.hosts[3 - t.i] AS partner,
           j.busbw < (1 - r.threshold) * j.baseline AS low
    FROM judged AS j CROSS JOIN rule AS r CROSS JOIN (VALUES (1), (2)) AS t(i)
    WHERE len(j.hosts) = 2
), per_host AS (
    SELECT host, ran_at, count(*) AS runs, count(DISTINCT partner) AS partners,
           count(*) FILTER (WHERE low) AS low_runs, bool_or(NOT low) AS ran_fine
    FROM sides GROUP BY host, ran_at
), flagged AS (
    SELECT s.host, s.ran_at, h.runs, h.low_runs,
           median(s.busbw) AS busbw, median(s.baseline) AS baseline,
           list({'ts': s.ran_at, 'kind': 'nccl_busbw', 'code': NULL::INTEGER,
                 'detail': printf('%s %d ranks %s: %.1f GB/s vs fleet median %.1f GB/s '
                                  '(%.2fx) with %s', s.collective, s.ranks,
                                  CASE WHEN s.size_bytes % 1073741824 = 0
                                       THEN printf('%d GiB', s.size_bytes // 1073741824)
                                       ELSE printf('%d MiB', s.size_bytes // 1048576) END,
                                  s.busbw, s.baseline, s.busbw / s.baseline, s.partner)}
                ORDER BY s.busbw / s.baseline, s.partner)[1:5] AS evidence
    FROM sides AS s
    JOIN per_host AS h USING (host, ran_at)
    JOIN per_host AS p ON p.host = s.partner AND p.ran_at = s.ran_at
    WHERE h.runs >= 2 AND h.partners >= 2 AND h.low_runs = h.runs
    GROUP BY s.host, s.ran_at, h.runs, h.low_runs
    HAVING bool_or(p.ran_fine)
)
SELECT host, ran_at, runs, low_runs,
       round(busbw, 2) AS busbw_gbs,
       round(baseline, 2) AS baseline_gbs,
       round(busbw / baseline, 3) AS ratio,
       evidence
FROM flagged
ORDER BY ran_at, host
