-- gpu_events of one ingest: the events the samples of the batches {batches} show, each against
-- the sample of the same GPU and field just before it (which may be in an earlier batch).
--
-- dcgm-exporter reports gauges and counters, not events: an XID is the last code a GPU reported
-- (a new event is a change of the value to a non-zero code, or the same code again after a gap
-- of more than {repeat_gap_s} s without it); ECC, remapped rows and NVLink errors are counters (an
-- event is an increase); a remap failure is a flag going to 1; throttling is a bitmask of clock
-- event reasons (an event is a reason bit that turns on: thermal 0x8 HW slowdown, 0x20 SW
-- thermal, 0x40 HW thermal; power 0x4 SW power cap, 0x80 HW power brake). Samples are matched
-- by GPU (host, gpu, uuid) and field, not by series, as a GPU's series change with its job labels;
-- a sample more than {lookback_s} s before is not taken as the one before.
WITH fields(metric, kind) AS (VALUES
    ('DCGM_FI_DEV_XID_ERRORS', 'xid'),
    ('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'ecc_sbe'),
    ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'ecc_dbe'),
    ('DCGM_FI_DEV_ECC_SBE_AGG_TOTAL', 'ecc_sbe'),
    ('DCGM_FI_DEV_ECC_DBE_AGG_TOTAL', 'ecc_dbe'),
    ('DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS', 'row_remap'),
    ('DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS', 'row_remap_uncorrectable'),
    ('DCGM_FI_DEV_ROW_REMAP_FAILURE', 'row_remap_failure'),
    ('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'throttle'),
    ('DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'throttle'),
    ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL', 'nvlink_error'),
    ('DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL', 'nvlink_error'),
    ('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL', 'nvlink_error'),
    ('DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL', 'nvlink_error')
), series AS MATERIALIZED (
    SELECT r.series_id, r.host, r.gpu, r.uuid, r.metric, f.kind
    FROM wanka.gpu_series r JOIN fields f USING (metric)
), fresh AS MATERIALIZED (
    SELECT x.host, x.gpu, x.uuid, x.metric, x.kind, s.ts, s.value, s.batch_id
    FROM wanka.gpu_samples s JOIN series x USING (series_id)
    WHERE s.batch_id IN ({batches})
), since AS (
    SELECT host, gpu, uuid, metric, min(ts) AS lo FROM fresh GROUP BY ALL
), before AS (  -- the last sample of each GPU and field up to the batch's first (a copy of
    -- a sample at the same time, of the GPU's other job, may be in an earlier batch)
    SELECT x.host, x.gpu, x.uuid, x.metric, x.kind,
           max(s.ts) AS ts, arg_max(s.value, s.ts) AS value, NULL::BIGINT AS batch_id
    FROM wanka.gpu_samples s JOIN series x USING (series_id)
    JOIN since b ON b.host IS NOT DISTINCT FROM x.host AND b.gpu IS NOT DISTINCT FROM x.gpu
        AND b.uuid IS NOT DISTINCT FROM x.uuid AND b.metric = x.metric
    WHERE s.ts <= b.lo AND s.ts >= b.lo - INTERVAL '{lookback_s} seconds'
        AND s.batch_id NOT IN ({batches})
    GROUP BY ALL
), steps AS (
    SELECT *, lag(value) OVER w AS prev, lag(ts) OVER w AS prev_ts
    FROM (SELECT * FROM fresh UNION ALL SELECT * FROM before)
    WINDOW w AS (PARTITION BY host, gpu, uuid, metric ORDER BY ts, batch_id NULLS FIRST)
), near AS (  -- a sample longer ago than the look-back is no sample before
    SELECT * REPLACE (CASE WHEN ts - prev_ts <= INTERVAL '{lookback_s} seconds' THEN prev END
                      AS prev)
    FROM steps
), found AS (
    SELECT ts, host, gpu, uuid, metric, value, prev, batch_id,
        CASE kind
            WHEN 'xid' THEN CASE WHEN value > 0 AND (prev IS DISTINCT FROM value
                OR ts - prev_ts > INTERVAL '{repeat_gap_s} seconds') THEN 'xid' END
            WHEN 'row_remap_failure' THEN CASE WHEN value > 0 AND coalesce(prev, 0) = 0
                THEN kind END
            WHEN 'throttle' THEN CASE
                WHEN (CAST(value AS BIGINT) & 104) <> 0
                    AND (CAST(value AS BIGINT) & 104 & ~CAST(coalesce(prev, 0) AS BIGINT)) <> 0
                    THEN 'thermal_throttle'
                WHEN (CAST(value AS BIGINT) & 132) <> 0
                    AND (CAST(value AS BIGINT) & 132 & ~CAST(coalesce(prev, 0) AS BIGINT)) <> 0
                    THEN 'power_throttle' END
            ELSE CASE WHEN prev IS NOT NULL AND value > prev THEN kind END
        END AS kind
    FROM near WHERE batch_id IS NOT NULL AND value = value
)
SELECT e.ts, e.host, e.gpu, e.uuid, e.kind,
       CASE WHEN e.kind = 'xid' THEN CAST(e.value AS INTEGER) END AS code,
       CASE WHEN e.kind = 'xid' THEN coalesce(c.description, 'unknown XID')
            WHEN e.kind LIKE '%throttle' THEN printf('clock event reasons 0x%x',
                                                      CAST(e.value AS BIGINT))
            WHEN e.kind = 'row_remap_failure' THEN 'row remapping failed'
            ELSE printf('+%d (%d in all)', CAST(e.value - coalesce(e.prev, 0) AS BIGINT),
                        CAST(e.value AS BIGINT)) END AS detail,
       e.metric, e.value, e.batch_id
FROM found e LEFT JOIN xid_codes c ON e.kind = 'xid' AND c.xid = CAST(e.value AS INTEGER)
WHERE e.kind IS NOT NULL
