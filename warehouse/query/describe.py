"""What the warehouse holds, for people and tools: tables, their columns, dynamic tables."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb

from warehouse.tsdb.relations import SAMPLES_TABLE

#: Schemas listed; `wanka.users` and `wanka.tokens` never are.
HIDDEN = frozenset({("wanka", "users"), ("wanka", "tokens")})


def _qualified(schema: str, table: str) -> str:
    return table if schema == "main" else f"{schema}.{table}"


def list_tables(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every table and view of the warehouse: name, kind, estimated rows, columns."""
    dynamic = _dynamic_names(cur)
    rows = cur.execute(
        "SELECT schema_name, table_name, estimated_size, 'table' FROM duckdb_tables() "
        "WHERE database_name = current_database() AND schema_name IN ('main', 'wanka') "
        # gpu_metrics is a view over the samples (sql/schema/0012): a table to its readers
        "UNION ALL SELECT v.schema_name, v.view_name, t.estimated_size, "
        "CASE WHEN t.table_name IS NULL THEN 'view' ELSE 'table' END FROM duckdb_views() v "
        "LEFT JOIN duckdb_tables() t ON v.schema_name = 'main' AND v.view_name = 'gpu_metrics' "
        "AND t.database_name = v.database_name AND t.schema_name = ? AND t.table_name = ? "
        "WHERE v.database_name = current_database() AND v.schema_name IN ('main', 'wanka') "
        "AND NOT v.internal ORDER BY 1, 2",
        list(SAMPLES_TABLE),
    ).fetchall()
    by_table = columns(cur)
    found = []
    for schema, table, estimated, kind in rows:
        if (schema, table) in HIDDEN:
            continue
        name = _qualified(schema, table)
        found.append(
            {
                "name": name,
                "kind": "dynamic table" if schema == "main" and table in dynamic else kind,
                "estimated_rows": estimated,
                "columns": by_table.get((schema, table), []),
            }
        )
    return found


def describe_table(cur: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any]:
    """One table's columns, types and exact row count; UserError when there is no such table."""
    by_name = {t["name"]: t for t in list_tables(cur)}
    found = by_name.get(name)
    if found is None:
        raise LookupError(f"no table named {name!r}")
    schema, _, table = name.rpartition(".")
    quoted = '"' + table.replace('"', '""') + '"'
    if schema:
        quoted = f'"{schema}".{quoted}'
    count = cur.execute(f"SELECT count(*) FROM {quoted}").fetchall()[0][0]  # name listed above
    return {**found, "rows": int(count)}


def columns(cur: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Each table's and view's columns in order (name, DuckDB type, nullable) by (schema, table)."""
    rows = cur.execute(
        "SELECT schema_name, table_name, column_name, data_type, is_nullable "
        "FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name IN ('main', 'wanka') ORDER BY schema_name, table_name, column_index"
    ).fetchall()
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for schema, table, column, data_type, nullable in rows:
        found.setdefault((schema, table), []).append(
            {"name": column, "type": data_type, "nullable": bool(nullable)}
        )
    return found


def _dynamic_names(cur: duckdb.DuckDBPyConnection) -> frozenset[str]:
    return frozenset(r[0] for r in cur.execute("SELECT name FROM wanka.dynamic_tables").fetchall())


def list_dynamic_tables(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Each dynamic table: freshness, mode (and why), state, last refresh, lag in seconds."""
    rel = cur.execute(
        "SELECT name, freshness, refresh_mode, refresh_mode_reason, state, error, "
        "last_refresh_at, data_timestamp, definition FROM wanka.dynamic_tables ORDER BY name"
    )
    names = [d[0] for d in rel.description]
    now = datetime.now(UTC)
    found = []
    for row in rel.fetchall():
        item = dict(zip(names, row, strict=True))
        stamp = item["data_timestamp"]
        item["lag_s"] = (now - stamp).total_seconds() if stamp is not None else None
        for key in ("last_refresh_at", "data_timestamp"):
            item[key] = item[key].isoformat() if item[key] is not None else None
        found.append(item)
    return found


def refresh_lag_s(cur: duckdb.DuckDBPyConnection) -> dict[str, float]:
    """Seconds since each refreshed dynamic table's data timestamp (for /metrics)."""
    return {t["name"]: t["lag_s"] for t in list_dynamic_tables(cur) if t["lag_s"] is not None}


def duckdb_memory(cur: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Bytes DuckDB's buffer manager holds now, by tag (BASE_TABLE, HASH_TABLE, ...), non-zero."""
    rows = cur.execute(
        "SELECT tag, memory_usage_bytes FROM duckdb_memory() WHERE memory_usage_bytes > 0"
    ).fetchall()
    return {str(tag): int(used) for tag, used in rows}


def duckdb_eviction_queues(cur: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """DuckDB's buffer eviction queues by type: (nodes, of them dead). A dead node is a freed
    (or since re-queued) buffer's entry, which keeps its handle's memory until DuckDB purges it:
    memory outside the buffer manager's count. DuckDB's dead-node counter can run off, so it is
    read within [0, nodes]."""
    rows = cur.execute(
        "SELECT queue_type, sum(approximate_size), sum(greatest(least(dead_nodes, "
        "approximate_size), 0)) FROM duckdb_eviction_queues() GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    return {str(kind): (int(nodes), int(dead)) for kind, nodes, dead in rows}
