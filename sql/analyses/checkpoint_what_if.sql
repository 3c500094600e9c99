-- checkpoint_what_if: What a 7B, 70B and 405B checkpoint costs on each storage-NIC configuration of the inventory: synchronous write vs two-stage async stall.
--
-- The story as a table: a 70B model's resumable state (bf16 + AdamW: 14 B per parameter, 980 GB)
-- written synchronously by $writer_nodes nodes through their storage NICs blocks training for
-- minutes — longer still when an 802.3ad bond carries the one write flow on one link only —
-- while a two-stage asynchronous save (device-to-host copy, then persist in the background)
-- blocks for seconds. One row per model size and distinct storage configuration (line rate,
-- NIC count, bond mode) in `nodes`, with the hosts that have it.
--
-- Parameters:
--   $writer_nodes          INTEGER = 1       nodes writing the checkpoint in parallel
--   $d2h_gbs               DOUBLE = 25       device-to-host copy per GPU, GB/s
--   $precision             VARCHAR = 'bf16'  training precision
--   $optimizer             VARCHAR = 'adamw' optimizer whose state is saved
--   $storage_gbs           DOUBLE = inf      storage system write ceiling, GB/s (inf = none)
-- Columns:
--   params_b               model size, billions of parameters
--   checkpoint_gb          resumable state, GB
--   storage_nic_gbps       line rate of one storage NIC, Gb/s
--   storage_nic_count      storage NICs per node
--   bond_mode              how they are bonded
--   hosts                  hosts with this configuration, count
--   one_flow_gbs           what one write flow per node gets, GB/s
--   sync_one_flow_s        synchronous save with one flow per node, s
--   sync_all_links_s       synchronous save with one flow per NIC, s
--   async_stall_s          two-stage async save: training blocked, s
--   times_faster           sync_one_flow_s / async_stall_s
WITH configs AS (
    SELECT storage_nic_gbps, storage_nic_count, bond_mode,
           count(*) AS hosts, max(gpus) AS gpus_per_node
    FROM nodes
    WHERE storage_nic_gbps > 0 AND storage_nic_count > 0 AND gpus > 0
    GROUP BY ALL
), models AS (
    SELECT params FROM (VALUES (7e9), (70e9), (405e9)) AS sizes(params)
), sized AS (
    SELECT m.params, c.*,
           checkpoint_bytes(m.params, $precision, $optimizer) AS bytes,
           link_write_gbs(c.storage_nic_gbps, c.storage_nic_count, c.bond_mode, 1) AS one_flow,
           link_write_gbs(c.storage_nic_gbps, c.storage_nic_count, c.bond_mode,
                          c.storage_nic_count) AS all_links
    FROM models AS m, configs AS c
), timed AS (
    SELECT *,
           checkpoint_write_s(bytes, $writer_nodes, one_flow, $storage_gbs) AS sync_one,
           checkpoint_write_s(bytes, $writer_nodes, all_links, $storage_gbs) AS sync_all,
           checkpoint_stall_s(bytes, $writer_nodes * gpus_per_node, $d2h_gbs) AS async_s
    FROM sized
)
SELECT round(params / 1e9) AS params_b,
       round(bytes / 1e9) AS checkpoint_gb,
       storage_nic_gbps, storage_nic_count, bond_mode, hosts,
       round(one_flow, 3) AS one_flow_gbs,
       round(sync_one, 1) AS sync_one_flow_s,
       round(sync_all, 1) AS sync_all_links_s,
       round(async_s, 2) AS async_stall_s,
       round(sync_one / async_s) AS times_faster
FROM timed
ORDER BY params_b, sync_one_flow_s DESC, bond_mode
