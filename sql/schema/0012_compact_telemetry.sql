-- Telemetry stored as a TSDB stores it: a series dictionary and narrow samples.
--
-- Version 11 kept gpu_metrics as one table with the strings of every label on every row. DuckDB
-- compresses strings per row group of 122,880 rows, and one scrape of 10,000 GPUs fills more than
-- one, so every row group carried the dictionary of every host and UUID again: 28.8 bytes a
-- sample at 10,000 GPUs, 8.3 at 1,024 (FIELD_NOTES.md, "Storage").
--
-- Now a series is one row of wanka.gpu_series — one per distinct (metric, host, gpu, uuid,
-- model, labels), the labels exactly as they arrived — and a sample is (series_id, ts, value,
-- batch_id) in wanka.gpu_samples: integers and a double, which DuckDB stores as runs (ts,
-- batch_id), deltas (series_id) and ALP (value). Series ids are taken in (metric, host, gpu, ...)
-- order as series first appear, so the samples of one scrape come metric by metric and a metric's
-- series are a narrow id range: a filter on metric prunes row groups of samples by their id zone
-- maps (DuckDB pushes the series side's id range into the samples scan).
--
-- gpu_metrics is a view with the columns and order it always had, so every query, dynamic table,
-- analysis and export reads it unchanged. Writes go through warehouse/telemetry.py: ingest and
-- `insert_arrow` add series then samples; INSERT, UPDATE and DELETE on gpu_metrics from any SQL
-- face are rewritten onto the two tables (DuckDB cannot write through a view).
--
-- Change tracking moves with the rows: the statement triggers of 0005 and the row logs of 0007
-- are now on wanka.gpu_samples, created in the same order (0005's first, so currval() in 0007's
-- is the seq of the same statement), and they still speak of 'gpu_metrics' and its columns.
--
-- Retention (warehouse/retention.py): `ALTER TABLE gpu_metrics SET (retention = '14 days')` keeps
-- its rule in wanka.retention; the scheduler deletes the samples older than the rule in a
-- transaction that first writes a row of wanka.retention_running, which the triggers below see
-- (and no other transaction does): a retention delete is not a change of gpu_metrics, so no
-- dynamic table recomputes — and erases — what it derived from the dropped rows.
--
-- This step moves the rows of an existing warehouse in place, in its one transaction: killed
-- half-way, the file is as it was and the next open runs the step again.

CREATE SEQUENCE wanka.series_seq START 1;

CREATE TABLE wanka.retention (
    table_name          VARCHAR NOT NULL,     -- one row per table with a rule
    keep                INTERVAL NOT NULL,    -- rows older than now() - keep are dropped
    held_from           TIMESTAMPTZ,          -- the last cutoff applied: older rows are gone
    set_at              TIMESTAMPTZ NOT NULL,
    set_by              VARCHAR
);
CREATE TABLE wanka.retention_running (table_name VARCHAR NOT NULL);

CREATE TABLE wanka.gpu_series (
    series_id           INTEGER NOT NULL,
    metric              VARCHAR NOT NULL,
    host                VARCHAR NOT NULL,
    gpu                 INTEGER,
    uuid                VARCHAR,
    model               VARCHAR,
    labels              JSON
);

CREATE TABLE wanka.gpu_samples (
    series_id           INTEGER NOT NULL,
    ts                  TIMESTAMPTZ NOT NULL,
    value               DOUBLE,
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);

-- One row per insert of samples: its batch, rows and time range. A refresh finds the newest
-- batch here instead of in the samples, whose zone maps it would otherwise walk row group by row
-- group (8 µs each: 7 ms at 100M samples, 65 ms at 1B). Written by warehouse/telemetry.py, the
-- one writer of the samples.
CREATE TABLE wanka.sample_batches (
    batch_id            BIGINT,
    rows                BIGINT NOT NULL,
    ts_min              TIMESTAMPTZ,
    ts_max              TIMESTAMPTZ
);

INSERT INTO wanka.gpu_series
SELECT nextval('wanka.series_seq'), metric, host, gpu, uuid, model, labels
FROM (SELECT DISTINCT metric, host, gpu, uuid, model, labels FROM gpu_metrics
      ORDER BY metric, host, gpu, uuid, model, labels);

INSERT INTO wanka.gpu_samples
SELECT r.series_id, m.ts, m.value, m.batch_id
FROM gpu_metrics m JOIN wanka.gpu_series r
    ON r.metric = m.metric AND r.host = m.host AND r.gpu IS NOT DISTINCT FROM m.gpu
    AND r.uuid IS NOT DISTINCT FROM m.uuid AND r.model IS NOT DISTINCT FROM m.model
    AND r.labels IS NOT DISTINCT FROM m.labels
ORDER BY m.batch_id, m.ts, r.series_id;

INSERT INTO wanka.sample_batches
SELECT batch_id, count(*), min(ts), max(ts) FROM wanka.gpu_samples GROUP BY batch_id;

DROP TABLE gpu_metrics;  -- and its triggers

CREATE VIEW gpu_metrics AS
SELECT s.ts, r.host, r.gpu, r.uuid, r.model, r.metric, s.value, r.labels, s.batch_id
FROM wanka.gpu_samples s JOIN wanka.gpu_series r ON r.series_id = s.series_id;

CREATE TRIGGER gpu_samples_changes_delete AFTER DELETE ON wanka.gpu_samples REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'gpu_metrics', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o
    WHERE NOT EXISTS (SELECT 1 FROM wanka.retention_running WHERE table_name = 'gpu_metrics')
    HAVING count(*) > 0;
CREATE TRIGGER gpu_samples_changes_update AFTER UPDATE ON wanka.gpu_samples REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'gpu_metrics', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

CREATE TRIGGER gpu_samples_rows_delete AFTER DELETE ON wanka.gpu_samples REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_gpu_metrics"
    SELECT o.ts, r.host, r.gpu, r.uuid, r.model, r.metric, o.value, r.labels, o.batch_id,
           currval('wanka.batch_seq'), 'deleted'
    FROM o JOIN wanka.gpu_series r ON r.series_id = o.series_id
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'gpu_metrics'))
        AND NOT EXISTS (SELECT 1 FROM wanka.retention_running WHERE table_name = 'gpu_metrics');
CREATE TRIGGER gpu_samples_rows_update AFTER UPDATE ON wanka.gpu_samples REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_gpu_metrics"
    SELECT o.ts, r.host, r.gpu, r.uuid, r.model, r.metric, o.value, r.labels, o.batch_id,
           currval('wanka.batch_seq'), 'deleted'
    FROM o JOIN wanka.gpu_series r ON r.series_id = o.series_id
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'gpu_metrics'))
    UNION ALL
    SELECT n.ts, r.host, r.gpu, r.uuid, r.model, r.metric, n.value, r.labels, n.batch_id,
           currval('wanka.batch_seq'), 'inserted'
    FROM n JOIN wanka.gpu_series r ON r.series_id = n.series_id
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'gpu_metrics'));
