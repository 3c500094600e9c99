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

@include(parts/change_rows_table.sql, table=sites);
@include(parts/change_rows_triggers.sql, table=sites);

@include(parts/change_rows_table.sql, table=clusters);
@include(parts/change_rows_triggers.sql, table=clusters);

@include(parts/change_rows_table.sql, table=nodes);
@include(parts/change_rows_triggers.sql, table=nodes);

@include(parts/change_rows_table.sql, table=gpu_metrics);
@include(parts/change_rows_triggers.sql, table=gpu_metrics);

@include(parts/change_rows_table.sql, table=jobs);
@include(parts/change_rows_triggers.sql, table=jobs);

@include(parts/change_rows_table.sql, table=job_steps);
@include(parts/change_rows_triggers.sql, table=job_steps);

@include(parts/change_rows_table.sql, table=job_events);
@include(parts/change_rows_triggers.sql, table=job_events);

@include(parts/change_rows_table.sql, table=pods);
@include(parts/change_rows_triggers.sql, table=pods);

@include(parts/change_rows_table.sql, table=nccl_results);
@include(parts/change_rows_triggers.sql, table=nccl_results);
