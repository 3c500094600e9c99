-- Block bytes stored as they are: DuckDB must not compress them again.
--
-- Left to choose, DuckDB compressed the BLOB column of wanka.gpu_blocks with ZSTD (blocks are
-- pcodec output, but their timestamps and batch ids repeated from one series run to the next).
-- DuckDB's ZSTD reads a vector of 2,048 BLOBs as one: reading the 24 blocks of one metric's day
-- at 10,000 GPUs decompressed all 384 blocks of the table, 116 ms against 12.5 ms uncompressed,
-- every query, and more as the table grows. Blocks now keep repeated runs once
-- (warehouse/kernel/blocks.py, column type 'r'), which took most of what ZSTD found.
--
-- DuckDB cannot change a column's compression in place, so both block tables are copied into
-- tables created with `USING COMPRESSION uncompressed`, then swapped, in this step's one
-- transaction. Blocks written before keep their layout; both are read.

CREATE TABLE wanka.gpu_blocks_0027 (
    block_id            BIGINT NOT NULL,
    metric              VARCHAR NOT NULL,
    window_start        TIMESTAMPTZ NOT NULL,
    series_lo           INTEGER NOT NULL,
    series_hi           INTEGER NOT NULL,
    ts_min              TIMESTAMPTZ NOT NULL,
    ts_max              TIMESTAMPTZ NOT NULL,
    batch_lo            BIGINT,
    batch_hi            BIGINT,
    samples             BIGINT NOT NULL,
    value_count         BIGINT NOT NULL,
    value_sum           DOUBLE,
    value_min           DOUBLE,
    value_max           DOUBLE,
    value_first         DOUBLE,
    value_last          DOUBLE,
    data                BLOB NOT NULL USING COMPRESSION uncompressed
);
INSERT INTO wanka.gpu_blocks_0027 SELECT * FROM wanka.gpu_blocks ORDER BY block_id;
DROP TABLE wanka.gpu_blocks;
ALTER TABLE wanka.gpu_blocks_0027 RENAME TO gpu_blocks;

CREATE TABLE wanka.tier_blocks_0027 (
    tier                VARCHAR NOT NULL,
    metric              VARCHAR NOT NULL,
    window_start        TIMESTAMPTZ NOT NULL,
    series_lo           INTEGER NOT NULL,
    series_hi           INTEGER NOT NULL,
    bucket_min          TIMESTAMPTZ NOT NULL,
    bucket_max          TIMESTAMPTZ NOT NULL,
    rows                BIGINT NOT NULL,
    data                BLOB NOT NULL USING COMPRESSION uncompressed
);
INSERT INTO wanka.tier_blocks_0027 SELECT * FROM wanka.tier_blocks;
DROP TABLE wanka.tier_blocks;
ALTER TABLE wanka.tier_blocks_0027 RENAME TO tier_blocks;
