-- A tracked table's log of the rows behind its updates and deletes (sql/schema/
-- 0007_change_rows.sql): its columns, then seq and kind ('deleted' or 'inserted').
-- `@include(parts/change_rows_table.sql, table=NAME);` in a schema step.
CREATE TABLE wanka."changes_${table}" AS
    SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind FROM ${table} LIMIT 0;
