-- Dynamic tables: change tracking on every base table, and what the planner records.
--
-- Inserts: every base-table row carries a batch id from wanka.batch_seq. Ingest sets it per
-- batch; a plain SQL INSERT that leaves it out now takes the next value of the same sequence, so
-- "rows with batch_id > watermark" is the set of rows inserted since a dynamic table's refresh.
-- Updates and deletes: statement-level triggers log how many rows each statement touched in
-- wanka.table_changes, with a sequence number from the same sequence. An UPDATE keeps the old
-- batch id, so updated rows do not look new: a dynamic table whose source shows a change after
-- its watermark is refreshed fully, and says so. (`at` is reserved in DuckDB 2.0: changed_at.)

CREATE TABLE wanka.table_changes (
    table_name          VARCHAR NOT NULL,
    seq                 BIGINT NOT NULL,      -- from wanka.batch_seq: comparable to batch ids
    kind                VARCHAR NOT NULL,     -- 'update' | 'delete'
    rows                BIGINT NOT NULL,
    changed_at          TIMESTAMPTZ NOT NULL
);

ALTER TABLE wanka.dynamic_tables ADD COLUMN sources VARCHAR[];     -- tables the query reads
ALTER TABLE wanka.dynamic_tables ADD COLUMN watermark BIGINT;      -- highest batch id reflected
ALTER TABLE wanka.dynamic_tables ADD COLUMN plan JSON;             -- the planner's output
ALTER TABLE wanka.dynamic_tables ADD COLUMN error VARCHAR;         -- last failure, if any


ALTER TABLE sites ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=sites);

ALTER TABLE clusters ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=clusters);

ALTER TABLE nodes ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=nodes);

ALTER TABLE gpu_metrics ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=gpu_metrics);

ALTER TABLE jobs ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=jobs);

ALTER TABLE job_steps ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=job_steps);

ALTER TABLE job_events ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=job_events);

ALTER TABLE pods ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=pods);

ALTER TABLE nccl_results ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
@include(parts/change_count_triggers.sql, table=nccl_results);
