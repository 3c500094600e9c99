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
CREATE TRIGGER sites_changes_delete AFTER DELETE ON sites REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'sites', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER sites_changes_update AFTER UPDATE ON sites REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'sites', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE clusters ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER clusters_changes_delete AFTER DELETE ON clusters REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'clusters', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER clusters_changes_update AFTER UPDATE ON clusters REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'clusters', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE nodes ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER nodes_changes_delete AFTER DELETE ON nodes REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'nodes', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER nodes_changes_update AFTER UPDATE ON nodes REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'nodes', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE gpu_metrics ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER gpu_metrics_changes_delete AFTER DELETE ON gpu_metrics REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'gpu_metrics', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER gpu_metrics_changes_update AFTER UPDATE ON gpu_metrics REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'gpu_metrics', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE jobs ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER jobs_changes_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'jobs', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER jobs_changes_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'jobs', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE job_steps ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER job_steps_changes_delete AFTER DELETE ON job_steps REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'job_steps', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER job_steps_changes_update AFTER UPDATE ON job_steps REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'job_steps', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE job_events ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER job_events_changes_delete AFTER DELETE ON job_events REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'job_events', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER job_events_changes_update AFTER UPDATE ON job_events REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'job_events', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE pods ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER pods_changes_delete AFTER DELETE ON pods REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'pods', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER pods_changes_update AFTER UPDATE ON pods REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'pods', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;

ALTER TABLE nccl_results ALTER COLUMN batch_id SET DEFAULT nextval('wanka.batch_seq');
CREATE TRIGGER nccl_results_changes_delete AFTER DELETE ON nccl_results REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'nccl_results', nextval('wanka.batch_seq'), 'delete', count(*), now() FROM o HAVING count(*) > 0;
CREATE TRIGGER nccl_results_changes_update AFTER UPDATE ON nccl_results REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka.table_changes
    SELECT 'nccl_results', nextval('wanka.batch_seq'), 'update', count(*), now() FROM o HAVING count(*) > 0;
