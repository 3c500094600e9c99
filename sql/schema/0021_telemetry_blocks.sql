-- Telemetry of closed windows in compressed blocks (the cold tier).
--
-- DuckDB's own codecs cannot store a sample in much less than 2 bytes (no delta step for
-- doubles, timestamps 4.6 B when sorted by series: FIELD_NOTES.md, "Storage"). pcodec, a codec
-- for numeric sequences, stores the same samples in about one byte when they are grouped as a
-- TSDB groups them: one metric, whole series runs, ordered by series then time.
--
-- So the samples of a window once it has closed (2 h by default; warehouse/tsdb/compact.py) are
-- moved, one transaction per window and metric, from wanka.gpu_samples (the hot tier, where
-- every write lands) into rows of wanka.gpu_blocks: each one metric's series runs of that window
-- in one BLOB (warehouse/kernel/blocks.py has its layout), and beside it its statistics. The
-- statistics let a reader skip a block by metric, series, time or batch without decoding it,
-- and answer count, sum, min, max, first and last over whole blocks without decoding at all.
--
-- gpu_metrics reads both tiers. Its cold half decodes through wanka_block(), a function each
-- wanka connection binds (warehouse.kernel.blocks.register): a bare DuckDB CLI on the file
-- cannot read gpu_metrics. A reader with a time or batch range (PromQL, the dynamic tables'
-- refreshes, the tiers, queries with a WHERE on ts) is given the blocks of that range only
-- (warehouse/tsdb/prune.py); this view, unfiltered, decodes every block.
--
-- Batch ids go into the blocks with their samples, and the batch log is left as it is: moving a
-- sample is not a change of gpu_metrics (compaction deletes under wanka.retention_running, as
-- retention does), so no dynamic table recomputes because of it.

CREATE SEQUENCE wanka.block_seq START 1;

CREATE TABLE wanka.gpu_blocks (
    block_id            BIGINT NOT NULL,
    metric              VARCHAR NOT NULL,     -- every series of the block has this metric
    window_start        TIMESTAMPTZ NOT NULL, -- the window its samples fell in
    series_lo           INTEGER NOT NULL,     -- its lowest and highest series id
    series_hi           INTEGER NOT NULL,
    ts_min              TIMESTAMPTZ NOT NULL, -- its earliest and latest sample
    ts_max              TIMESTAMPTZ NOT NULL,
    batch_lo            BIGINT,               -- its lowest and highest batch id
    batch_hi            BIGINT,
    samples             BIGINT NOT NULL,      -- rows, with or without a value
    value_count         BIGINT NOT NULL,      -- rows with a value
    value_sum           DOUBLE,               -- as DuckDB's sum, min and max of value
    value_min           DOUBLE,
    value_max           DOUBLE,
    value_first         DOUBLE,               -- the value of its earliest and latest sample
    value_last          DOUBLE,               -- with a value (of equal times, the lowest series)
    data                BLOB NOT NULL         -- the samples, compressed
);

CREATE OR REPLACE VIEW gpu_metrics AS
SELECT s.ts, r.host, r.gpu, r.uuid, r.model, r.metric, s.value, r.labels, s.batch_id
FROM (
    SELECT series_id, ts, value, batch_id FROM wanka.gpu_samples
    UNION ALL
    SELECT unnest(wanka_block(data, NULL, NULL, NULL, NULL, NULL), recursive := true)
    FROM wanka.gpu_blocks
) s JOIN wanka.gpu_series r ON r.series_id = s.series_id;

-- The downsampling tiers (0013) of closed windows are compacted the same way: a tier's rows of
-- one window and metric, ordered by series then bucket, in blocks of whole series runs (columns
-- bucket, samples, value_sum, value_min, value_max, value_last, last_ts; NULLs as positions).
-- A fold that must change a compacted bucket (samples arriving late, an UPDATE or DELETE of
-- hot samples, twin series merged) first puts that block's rows back into its tier table
-- (warehouse/tsdb/tiers.py), so a bucket is always one row, hot or cold.
CREATE TABLE wanka.tier_blocks (
    tier                VARCHAR NOT NULL,     -- the tier table: 'wanka.gpu_tier_1m' or '_1h'
    metric              VARCHAR NOT NULL,
    window_start        TIMESTAMPTZ NOT NULL,
    series_lo           INTEGER NOT NULL,
    series_hi           INTEGER NOT NULL,
    bucket_min          TIMESTAMPTZ NOT NULL,
    bucket_max          TIMESTAMPTZ NOT NULL,
    rows                BIGINT NOT NULL,
    data                BLOB NOT NULL
);

-- The minute tier keeps only minutes of two samples or more (warehouse/tsdb/tiers.py): at 60 s
-- scrapes a minute holds one sample, and its row would be that sample again. A minute of one
-- sample is read from the samples themselves: those folded (batch up to the tiers' watermark,
-- as the tiers lag the samples by one pass) whose minute has no row in the tier.
CREATE OR REPLACE VIEW gpu_metrics_1m AS
WITH k AS (
    SELECT * FROM wanka.gpu_tier_1m
    UNION ALL
    SELECT unnest(wanka_tier_block(data, NULL, NULL, NULL), recursive := true)
    FROM wanka.tier_blocks WHERE tier = 'wanka.gpu_tier_1m'
)
SELECT t.bucket, r.metric, r.host, r.gpu, r.uuid, r.model, r.labels, t.samples, t.value_sum,
       coalesce(t.value_min, t.value_sum) AS value_min,
       coalesce(t.value_max, t.value_sum) AS value_max,
       coalesce(t.value_last, t.value_sum) AS value_last, t.last_ts
FROM (
    SELECT * FROM k
    UNION ALL
    SELECT s.series_id, time_bucket(INTERVAL '1 minute', s.ts) AS bucket, 1 AS samples,
           s.value AS value_sum, NULL::DOUBLE AS value_min, NULL::DOUBLE AS value_max,
           NULL::DOUBLE AS value_last, s.ts AS last_ts
    FROM (
        SELECT series_id, ts, value, batch_id FROM wanka.gpu_samples
        UNION ALL
        SELECT unnest(wanka_block(data, NULL, NULL, NULL, NULL, NULL), recursive := true)
        FROM wanka.gpu_blocks
    ) AS s
    WHERE s.value IS NOT NULL AND s.batch_id <= (SELECT watermark FROM wanka.tier_state)
      AND NOT EXISTS (SELECT 1 FROM k WHERE k.series_id = s.series_id
                      AND k.bucket = time_bucket(INTERVAL '1 minute', s.ts))
) t JOIN wanka.gpu_series r ON r.series_id = t.series_id;
CREATE OR REPLACE VIEW gpu_metrics_1h AS
SELECT t.bucket, r.metric, r.host, r.gpu, r.uuid, r.model, r.labels, t.samples, t.value_sum,
       coalesce(t.value_min, t.value_sum) AS value_min,
       coalesce(t.value_max, t.value_sum) AS value_max,
       coalesce(t.value_last, t.value_sum) AS value_last, t.last_ts
FROM (
    SELECT * FROM wanka.gpu_tier_1h
    UNION ALL
    SELECT unnest(wanka_tier_block(data, NULL, NULL, NULL), recursive := true)
    FROM wanka.tier_blocks WHERE tier = 'wanka.gpu_tier_1h'
) t JOIN wanka.gpu_series r ON r.series_id = t.series_id;
