-- interconnect_balance: Per host, NIC vs PCIe slot vs NVLink: which link limits and what a 7B/70B gradient all-reduce costs.
--
-- A NIC trains its PCIe link to the lower of the slot's and the card's generation and lanes, so
-- a 400 Gb/s NIC (50 GB/s) in a Gen4 x16 slot moves 31.5 GB/s: the slot is the bottleneck and
-- 37 % of the line rate is lost. Scale-up (NVLink) is compared per GPU and direction with the
-- host's network share per GPU. The all-reduce costs are the α–β model of `allreduce_s` for
-- bf16 gradients of a 7B and a 70B model over $job_gpus GPUs of hosts like this one:
-- hierarchical (NVLink inside the node, then the node's NICs) vs one flat ring.
--
-- Parameters:
--   $job_gpus              INTEGER = 1024  GPUs the all-reduce spans
--   $grad_bytes_per_param  DOUBLE = 2      gradient bytes per parameter (2 = bf16)
--   $latency_us            DOUBLE = 5      per-step latency α, µs
--   $cluster               VARCHAR = ''    only this cluster ('' = every cluster)
-- Columns:
--   host                   host name
--   cluster                cluster of the host
--   gpu_model              GPU model
--   nic_model              compute NIC model
--   nic_count              compute NICs in the host
--   nic_line_gbs           one NIC's line rate, GB/s
--   pcie_slot_gbs          what the NIC's trained PCIe link carries, GB/s per direction
--   nic_effective_gbs      min(line rate, PCIe link), GB/s per direction
--   bottleneck             'nic' or 'pcie': which one limits
--   lost_pct               share of the NIC's line rate the slot wastes, %
--   net_gbs_per_gpu        all compute NICs of the host per GPU, GB/s per direction
--   nvlink_gbs_per_gpu     scale-up bandwidth per GPU, GB/s per direction
--   nvlink_over_net        how many times faster scale-up is than the network share, ratio
--   allreduce_7b_hier_s    7B gradient all-reduce, hierarchical, s
--   allreduce_7b_ring_s    7B gradient all-reduce, flat ring, s
--   allreduce_70b_hier_s   70B gradient all-reduce, hierarchical, s
--   allreduce_70b_ring_s   70B gradient all-reduce, flat ring, s
WITH links AS (
    SELECT n.host, n.cluster, n.gpu_model, n.nic_model, n.nic_count, n.gpus,
           k.line_rate_gbps,
           least(n.pcie_gen, k.pcie_gen) AS link_gen,
           least(n.pcie_lanes, k.pcie_lanes) AS link_lanes,
           g.scaleup_gbs / 2 AS nvlink_gbs_per_gpu
    FROM nodes AS n
    JOIN nic_models AS k ON k.model = n.nic_model
    LEFT JOIN gpu_models AS g ON g.model = n.gpu_model
    WHERE $cluster = '' OR n.cluster = $cluster
), rates AS (
    SELECT *,
           nic_gbs(line_rate_gbps) AS nic_line_gbs,
           pcie_gbs(link_gen, link_lanes) AS pcie_slot_gbs,
           nic_effective_gbs(line_rate_gbps, link_gen, link_lanes) AS nic_effective_gbs,
           nic_bottleneck(line_rate_gbps, link_gen, link_lanes) AS bottleneck,
           node_nic_gbs(nic_count, line_rate_gbps, link_gen, link_lanes) AS node_gbs
    FROM links
), costs AS (
    SELECT *,
           allreduce_s(7e9 * $grad_bytes_per_param, $job_gpus, gpus, nvlink_gbs_per_gpu,
                       node_gbs, 'hierarchical', $latency_us) AS ar7h,
           allreduce_s(7e9 * $grad_bytes_per_param, $job_gpus, gpus, nvlink_gbs_per_gpu,
                       node_gbs, 'ring', $latency_us) AS ar7r,
           allreduce_s(70e9 * $grad_bytes_per_param, $job_gpus, gpus, nvlink_gbs_per_gpu,
                       node_gbs, 'hierarchical', $latency_us) AS ar70h,
           allreduce_s(70e9 * $grad_bytes_per_param, $job_gpus, gpus, nvlink_gbs_per_gpu,
                       node_gbs, 'ring', $latency_us) AS ar70r
    FROM rates
    WHERE gpus > 0 AND nvlink_gbs_per_gpu > 0
)
SELECT host, cluster, gpu_model, nic_model, nic_count,
       round(nic_line_gbs, 2) AS nic_line_gbs,
       round(pcie_slot_gbs, 2) AS pcie_slot_gbs,
       round(nic_effective_gbs, 2) AS nic_effective_gbs,
       bottleneck,
       round(100 * (1 - nic_effective_gbs / nic_line_gbs), 1) AS lost_pct,
       round(node_gbs / gpus, 2) AS net_gbs_per_gpu,
       nvlink_gbs_per_gpu,
       round(nvlink_gbs_per_gpu / (node_gbs / gpus), 1) AS nvlink_over_net,
       round(ar7h, 4) AS allreduce_7b_hier_s,
       round(ar7r, 4) AS allreduce_7b_ring_s,
       round(ar70h, 4) AS allreduce_70b_hier_s,
       round(ar70r, 4) AS allreduce_70b_ring_s
FROM costs
ORDER BY lost_pct DESC, cluster, host
