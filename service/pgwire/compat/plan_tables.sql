-- The tables an EXPLAIN's plan scans: each column's type and the table's estimated row count,
-- for the widths and costs of service/pgwire/compat/plan.py.
-- $1: the tables' names as DuckDB's plan writes them (database.schema.table).
SELECT
    c.database_name || '.' || c.schema_name || '.' || c.table_name AS qualified,
    c.column_name,
    c.data_type,
    t.estimated_size
FROM duckdb_columns() AS c
JOIN duckdb_tables() AS t USING (database_name, schema_name, table_name)
WHERE list_contains($1::VARCHAR[], c.database_name || '.' || c.schema_name || '.' || c.table_name)
