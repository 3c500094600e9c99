"""Dynamic tables: tables declared by a query and kept equal to it by refreshes.

The one parse of a submitted text (`warehouse.parsing`) recognises CREATE / ALTER / REFRESH [FULL] /
DROP DYNAMIC TABLE and `statements` runs them; `catalog` keeps definitions, plan and watermark in
`wanka.dynamic_tables`. `plan/` is the incremental planner, a pipeline of small sqlglot rewrite
steps with golden tests (`normalize` GROUP BY, `shape` the strategy a query's shape allows and why
not, `determinism` by DuckDB function stability, `delta` the batch-id window, `aggregate` per-key
state, `merge`, `groups` the query restricted to the affected groups, `joins` the affected groups of
inner joins and chains) whose output is a typed plan (`plan/kinds.py`:
`Append | Aggregate | Groups | Full`, frozen, the reason with `Full`, stored as versioned JSON).
`dml` wraps a plan's queries in the INSERT, DELETE and MERGE statements a refresh runs; `refresh`
applies one refresh in one transaction (`regroup` when recomputing the affected groups beats a full
refresh, `chain` logs what a dynamic table's refreshes insert and delete once another dynamic table
reads it); `history` records it in `wanka.refresh_history` — a success inside the refresh's
transaction, a failure in its rollback handler, whichever face asked; `schedule` picks the due
tables in dependency order for `wanka refresh` and the serve process; `shipped` installs
`sql/dynamic/*.sql`.

New rows are found by their `batch_id` (schema step 0005: a base table's default is
`nextval('wanka.batch_seq')`); UPDATEs and DELETEs are counted by triggers in `wanka.table_changes`
and, from step 0007, their old and new rows kept in `wanka."changes_<table>"`, trimmed once every
dynamic table reading the table has refreshed past them. Reloads of reference tables are logged
there too (kind 'reload') and force a full refresh of the dynamic tables joining them. So a refresh
costs what changed, not the history the sources hold.
"""
