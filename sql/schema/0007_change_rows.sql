-- Dynamic tables: the rows behind updates and deletes, so a refresh can recompute only the groups
-- they belong to (the 'groups' plan, and 'aggregate' plans after an update or delete).
--
-- For each base table t, wanka."changes_t" holds t's columns plus seq (the sequence number the
-- statement's wanka.table_changes row took, so it compares with batch ids) and kind: 'deleted'
-- for the OLD rows of a DELETE or UPDATE, 'inserted' for the NEW rows of an UPDATE. The triggers
-- of 0005 stay (wanka.table_changes is read as it is); the triggers here are created after them,
-- and DuckDB fires a table's statement triggers in creation order, so currval() is the seq of
-- the table_changes row of the same statement. A refresh reads log rows with seq > its
-- watermark and deletes those older than every dynamic table's watermark (trim_changes).
-- Cost: rows are copied only while some dynamic table reads the table (a retention DELETE of
-- telemetry nobody derives from copies nothing); the ingest's replace-by-key DELETE of jobs/nodes
-- rows read by a dynamic table copies the deleted rows once.
-- MERGE is refused on tables with triggers: these logs and the dynamic/state tables have none.

CREATE TABLE wanka."changes_sites" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM sites LIMIT 0;
CREATE TRIGGER sites_rows_delete AFTER DELETE ON sites REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_sites"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'sites'));
CREATE TRIGGER sites_rows_update AFTER UPDATE ON sites REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_sites"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'sites'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'sites'));

CREATE TABLE wanka."changes_clusters" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM clusters LIMIT 0;
CREATE TRIGGER clusters_rows_delete AFTER DELETE ON clusters REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_clusters"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'clusters'));
CREATE TRIGGER clusters_rows_update AFTER UPDATE ON clusters REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_clusters"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'clusters'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'clusters'));

CREATE TABLE wanka."changes_nodes" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM nodes LIMIT 0;
CREATE TRIGGER nodes_rows_delete AFTER DELETE ON nodes REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_nodes"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'nodes'));
CREATE TRIGGER nodes_rows_update AFTER UPDATE ON nodes REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_nodes"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'nodes'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'nodes'));

CREATE TABLE wanka."changes_gpu_metrics" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM gpu_metrics LIMIT 0;
CREATE TRIGGER gpu_metrics_rows_delete AFTER DELETE ON gpu_metrics REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_gpu_metrics"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'gpu_metrics'));
CREATE TRIGGER gpu_metrics_rows_update AFTER UPDATE ON gpu_metrics REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_gpu_metrics"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'gpu_metrics'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'gpu_metrics'));

CREATE TABLE wanka."changes_jobs" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM jobs LIMIT 0;
CREATE TRIGGER jobs_rows_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_jobs"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'jobs'));
CREATE TRIGGER jobs_rows_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_jobs"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'jobs'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'jobs'));

CREATE TABLE wanka."changes_job_steps" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM job_steps LIMIT 0;
CREATE TRIGGER job_steps_rows_delete AFTER DELETE ON job_steps REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_job_steps"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'job_steps'));
CREATE TRIGGER job_steps_rows_update AFTER UPDATE ON job_steps REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_job_steps"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'job_steps'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'job_steps'));

CREATE TABLE wanka."changes_job_events" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM job_events LIMIT 0;
CREATE TRIGGER job_events_rows_delete AFTER DELETE ON job_events REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_job_events"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'job_events'));
CREATE TRIGGER job_events_rows_update AFTER UPDATE ON job_events REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_job_events"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'job_events'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'job_events'));

CREATE TABLE wanka."changes_pods" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM pods LIMIT 0;
CREATE TRIGGER pods_rows_delete AFTER DELETE ON pods REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_pods"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'pods'));
CREATE TRIGGER pods_rows_update AFTER UPDATE ON pods REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_pods"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'pods'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'pods'));

CREATE TABLE wanka."changes_nccl_results" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM nccl_results LIMIT 0;
CREATE TRIGGER nccl_results_rows_delete AFTER DELETE ON nccl_results REFERENCING OLD TABLE AS o
    FOR EACH STATEMENT INSERT INTO wanka."changes_nccl_results"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'nccl_results'));
CREATE TRIGGER nccl_results_rows_update AFTER UPDATE ON nccl_results REFERENCING OLD TABLE AS o NEW TABLE AS n
    FOR EACH STATEMENT INSERT INTO wanka."changes_nccl_results"
    SELECT *, currval('wanka.batch_seq'), 'deleted' FROM o
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'nccl_results'))
    UNION ALL SELECT *, currval('wanka.batch_seq'), 'inserted' FROM n
        WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables WHERE list_contains(sources, 'nccl_results'));
