"""The database kernel: the DuckDB file, its schema steps, catalog, tables and transactions."""
