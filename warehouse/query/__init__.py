"""The query path shared by every face: run a parsed script on a caller's cursor, hand back Arrow.

`executor.execute` runs all but the last statement of a `Script` for their effect and returns
the last one's result as an Arrow `RecordBatchReader`: SELECTs through DuckDB's own statement
runner (one bind instead of two), DYNAMIC TABLE statements through `warehouse.dynamic`, DML on
gpu_metrics through `warehouse.tsdb.dml` and retention's ALTER TABLE through
`warehouse.dynamic.retention` (which checks the dynamic tables reading the table, then sets
`warehouse.tsdb.retention`'s rule). `prepared` EXECUTEs a SELECT text that runs again as a statement
prepared once on that cursor (dashboards send the same few texts again and again; EXECUTE skips
parse, bind and plan). `search_path` resolves unqualified relation names along a PostgreSQL
search_path by writing the schema into the statement, so the role policy checks what DuckDB
will read (pgwire's `SET search_path`, HTTP's `schema`). `describe` lists tables, columns and
dynamic tables for the HTTP catalog routes and pgwire's result types.
"""
