-- checkpoint_cost: Per job: checkpoint size, write time, stall with and without async save, Young/Daly interval, GPU time lost.
--
-- For every job that saved checkpoints (job_events 'checkpoint', whose detail names the model
-- size): the resumable state is checkpoint_bytes(params, precision, optimizer); a synchronous
-- save blocks training while every node writes its share through its storage NICs — bonded
-- per bond_mode, where one 802.3ad flow never uses more than one link — capped by the storage
-- system; a two-stage asynchronous save (copy each GPU's shard to host memory, persist in the
-- background) blocks only for the device-to-host copy. The MTBF comes from the failures the
-- cluster saw (xid_failure events and NODE_FAIL jobs over the GPU-hours jobs ran), or from
-- $fallback_gpu_mtbf_h when none were seen, scaled to the job's GPUs; the interval is Daly's
-- optimum for each stall, and the waste the fraction of GPU time lost to saving, rework and
-- restarts. A 70B model on 2×25 GbE in 802.3ad saves for ~300 s synchronously and stalls for
-- under a second asynchronously: the "383 s → 5 s" story as a table.
--
-- Parameters:
--   $precision              VARCHAR = 'bf16'   training precision of the weights
--   $optimizer              VARCHAR = 'adamw'  optimizer whose state is saved
--   $flows_per_node         INTEGER = 1        concurrent write flows per node
--   $storage_gbs            DOUBLE = inf       storage system write ceiling, GB/s (inf = none)
--   $d2h_gbs                DOUBLE = 25        device-to-host copy per GPU, GB/s
--   $restart_s              DOUBLE = 600       time to restart after a failure, s
--   $fallback_gpu_mtbf_h    DOUBLE = 50677     per-GPU MTBF when no failure was seen, h (Llama 3: 419 interruptions, 16,384 GPUs, 54 days)
-- Columns:
--   job_id                  job
--   account                 team
--   gpus                    GPUs of the job
--   nodes                   nodes writing in parallel
--   params_b                model size, billions of parameters
--   checkpoint_gb           resumable state, GB
--   bond_mode               storage NIC bond mode of the slowest writer
--   node_write_gbs          usable write bandwidth of the slowest writer node, GB/s
--   sync_stall_s            a synchronous save: time training is blocked, s
--   observed_save_s         mean save time the job logged, s
--   async_stall_s           a two-stage asynchronous save: time training is blocked, s
--   job_mtbf_h              mean time between interruptions at the job's scale, h
--   daly_sync_s             Daly-optimal interval with synchronous saves, s
--   daly_async_s            Daly-optimal interval with asynchronous saves, s
--   lost_sync_pct           GPU time lost with synchronous saves, %
--   lost_async_pct          GPU time lost with asynchronous saves, %
--   gpu_hours_saved         GPU-hours async saving would have saved over the job's run, GPU-h
WITH saves AS (
    SELECT job_id,
           max(TRY_CAST(regexp_extract(detail, '([0-9.]+)B params', 1) AS DOUBLE)) * 1e9 AS params,
           avg(value) AS observed_save_s,
           count(*) AS saves
    FROM job_events WHERE event = 'checkpoint' GROUP BY job_id
), failures AS (
    SELECT (SELECT count(*) FROM job_events WHERE event = 'xid_failure')
         + (SELECT count(*) FROM jobs WHERE state = 'NODE_FAIL') AS n,
           (SELECT sum(gpus * elapsed_s) / 3600 FROM jobs WHERE gpus > 0 AND elapsed_s > 0) AS gpu_h
), mtbf AS (
    SELECT coalesce(CASE WHEN n > 0 THEN gpu_mtbf_h(n, 1, gpu_h) END, $fallback_gpu_mtbf_h) AS gpu_mtbf_h
    FROM failures
), writers AS (
    SELECT j.job_id,
           min(link_write_gbs(n.storage_nic_gbps, n.storage_nic_count, n.bond_mode, $flows_per_node)) AS node_write_gbs,
           arg_min(n.bond_mode, link_write_gbs(n.storage_nic_gbps, n.storage_nic_count, n.bond_mode, $flows_per_node)) AS bond_mode
    FROM jobs AS j, unnest(j.node_list) AS u(host)
    JOIN nodes AS n ON n.host = u.host
    WHERE j.job_id IN (SELECT job_id FROM saves)
    GROUP BY j.job_id
), sized AS (
    SELECT j.job_id, j.account, j.gpus, j.nodes, j.elapsed_s, s.params, s.observed_save_s,
           w.bond_mode, w.node_write_gbs,
           checkpoint_bytes(s.params, $precision, $optimizer) AS bytes,
           cluster_mtbf_h(m.gpu_mtbf_h, j.gpus) AS job_mtbf_h
    FROM saves AS s JOIN jobs AS j USING (job_id) JOIN writers AS w USING (job_id), mtbf AS m
    WHERE j.gpus > 0
), stalls AS (
    SELECT *,
           checkpoint_write_s(bytes, nodes, node_write_gbs, $storage_gbs) AS sync_s,
           checkpoint_stall_s(bytes, gpus, $d2h_gbs) AS async_s
    FROM sized
), intervals AS (
    SELECT *,
           daly_interval_s(sync_s, job_mtbf_h * 3600) AS daly_sync_s,
           daly_interval_s(async_s, job_mtbf_h * 3600) AS daly_async_s
    FROM stalls
), waste AS (
    SELECT *,
           checkpoint_waste_fraction(daly_sync_s, sync_s, job_mtbf_h * 3600, $restart_s) AS w_sync,
           checkpoint_waste_fraction(daly_async_s, async_s, job_mtbf_h * 3600, $restart_s) AS w_async
    FROM intervals
)
SELECT job_id, account, gpus, nodes,
       round(params / 1e9, 1) AS params_b,
       round(bytes / 1e9, 1) AS checkpoint_gb,
       bond_mode,
       round(node_write_gbs, 3) AS node_write_gbs,
       round(sync_s, 1) AS sync_stall_s,
       round(observed_save_s, 1) AS observed_save_s,
       round(async_s, 2) AS async_stall_s,
       round(job_mtbf_h, 1) AS job_mtbf_h,
       round(daly_sync_s) AS daly_sync_s,
       round(daly_async_s) AS daly_async_s,
       round(100 * w_sync, 2) AS lost_sync_pct,
       round(100 * w_async, 2) AS lost_async_pct,
       round((w_sync - w_async) * gpus * coalesce(elapsed_s, 0) / 3600, 1) AS gpu_hours_saved
FROM waste
ORDER BY sync_stall_s DESC, job_id
