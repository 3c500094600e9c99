"""Arrow in and out of tables: a table's Arrow schema, and appending Arrow rows by name."""

from __future__ import annotations

import re
import threading

import duckdb
import pyarrow as pa

from warehouse.errors import UserError


def table_schema(con: duckdb.DuckDBPyConnection, table: str) -> pa.Schema:
    """The Arrow schema DuckDB gives `table`'s columns."""
    database = con.sql("SELECT current_database()").fetchall()[0][0]
    cur = con.cursor()
    try:
        cur.execute(f'USE "{database}"')
        return cur.sql(f"SELECT * FROM {quote_table(table)} LIMIT 0").to_arrow_table().schema
    finally:
        cur.close()


def quote_table(table: str) -> str:
    parts = table.split(".")
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) for p in parts) or len(parts) > 2:
        raise UserError(f"not a table name: {table!r}")
    return ".".join(f'"{p}"' for p in parts)


def insert_arrow(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    data: pa.Table | pa.RecordBatchReader,
) -> int:
    """INSERT ... BY NAME from an Arrow table or stream; columns it lacks take their defaults.

    A base table only: telemetry goes in through its store (`warehouse.tsdb.append`), as
    DuckDB cannot write through the gpu_metrics view."""
    view = f"_wanka_insert_{threading.get_ident()}"
    cur.register(view, data)
    try:
        rows = cur.execute(f"INSERT INTO {quote_table(table)} BY NAME SELECT * FROM {view}")
        return int(rows.fetchall()[0][0])
    finally:
        cur.unregister(view)
