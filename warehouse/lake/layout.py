"""What the lake holds and where: one Delta table per folder, wanka's own files in `_wanka/`.

```
DIR/gpu_metrics/        Delta, partitioned by ts_day (UTC day of ts)
DIR/jobs/ ...           Delta, one folder per base, reference and dynamic table
DIR/_wanka/dynamic_tables.json   dynamic-table definitions (query, keys, sources, portability)
```
The helpers here read the warehouse (DuckDB) side: which tables to export, their rows as
SQL, their watermarks and logged changes. Column lists come from the database (the DDL is the
one source); JSON columns travel as text, which both engines read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa

from warehouse.kernel.tables import LAKE, REFERENCE
from warehouse.lake.delta import PARTITION_COLUMN, write_json_atomically

WANKA_DIR = "_wanka"
DEFINITIONS = "dynamic_tables.json"


@dataclass(frozen=True)
class DynamicDefinition:
    """A dynamic table as the lake records it, for engines that refresh it there."""

    name: str
    query: str
    freshness: str
    sources: list[str]
    key_positions: list[int]
    watermark: int
    spark_portable: bool | None
    spark_reason: str | None


def table_path(lake: Path, table: str) -> Path:
    return lake / table


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def base_tables() -> list[str]:
    """The tables the lake holds rows of, as the schema declares them (`warehouse.kernel.tables`),
    by name: an export commits them one by one in this order."""
    return sorted(t for t in LAKE if t not in REFERENCE)


def reference_tables() -> list[str]:
    """The reference tables the lake holds (rewritten whole when wanka reloads them)."""
    return sorted(t for t in LAKE if t in REFERENCE)


def _columns(cur: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return cur.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = "
        "current_database() AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [table],
    ).fetchall()


def is_partitioned(cur: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Time series (a TIMESTAMPTZ column `ts`) are partitioned by day in the lake."""
    return ("ts", "TIMESTAMP WITH TIME ZONE") in _columns(cur, table)


def select_rows(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    where: str | None = None,
    *,
    partitioned: bool = True,
) -> str:
    """SELECT of `table`'s columns as the lake stores them (JSON as text, + ts_day)."""
    items = [
        f"CAST({_ident(c)} AS VARCHAR) AS {_ident(c)}" if t == "JSON" else _ident(c)
        for c, t in _columns(cur, table)
    ]
    if partitioned and is_partitioned(cur, table):
        items.append(f"CAST(ts AS DATE) AS {PARTITION_COLUMN}")
    sql = f"SELECT {', '.join(items)} FROM main.{_ident(table)}"
    return f"{sql} WHERE {where}" if where else sql


def high_watermark(cur: duckdb.DuckDBPyConnection, table: str) -> int:
    """The highest batch id or change sequence number of `table` in this snapshot."""
    rows = cur.execute(
        f"SELECT greatest(coalesce((SELECT max(batch_id) FROM main.{_ident(table)}), 0), "
        "coalesce((SELECT max(seq) FROM wanka.table_changes WHERE table_name = ?), 0))",
        [table],
    ).fetchall()
    return int(rows[0][0])


def reload_watermark(cur: duckdb.DuckDBPyConnection, table: str) -> int:
    """The sequence number of a reference table's last reload."""
    rows = cur.execute(
        "SELECT coalesce(max(seq), 0) FROM wanka.table_changes WHERE table_name = ?", [table]
    ).fetchall()
    return int(rows[0][0])


def _log(table: str) -> str:
    return f'wanka."changes_{table}"'


def changes_since(cur: duckdb.DuckDBPyConnection, table: str, mark: int) -> tuple[bool, bool]:
    """(any update/delete after `mark`, every changed row's old version still in the log)."""
    [(changed_rows,)] = cur.execute(
        "SELECT coalesce(sum(rows), 0) FROM wanka.table_changes "
        "WHERE table_name = ? AND seq > ? AND kind IN ('update', 'delete')",
        [table, mark],
    ).fetchall()
    if not changed_rows:
        return False, True
    [(logged,)] = cur.execute(
        f"SELECT count(*) FROM {_log(table)} WHERE seq > ? AND kind = 'deleted'", [mark]
    ).fetchall()
    return True, int(logged) >= int(changed_rows)


def affected_days(cur: duckdb.DuckDBPyConnection, table: str, mark: int) -> list[date]:
    """UTC days of the rows inserted, updated or deleted after `mark`."""
    rows = cur.execute(
        f"SELECT DISTINCT CAST(ts AS DATE) AS d FROM (SELECT ts FROM main.{_ident(table)} "
        f"WHERE batch_id > ? UNION ALL SELECT ts FROM {_log(table)} WHERE seq > ?) ORDER BY d",
        [mark, mark],
    ).fetchall()
    return [r[0] for r in rows]


def touched_rows(
    cur: duckdb.DuckDBPyConnection, table: str, keys: tuple[str, ...], mark: int
) -> tuple[pa.Table, pa.Table]:
    """(current rows of every key inserted or changed after `mark`, keys now gone)."""
    key_list = ", ".join(_ident(k) for k in keys)
    touched = (
        f"SELECT DISTINCT {key_list} FROM main.{_ident(table)} WHERE batch_id > {mark:d} "
        f"UNION SELECT DISTINCT {key_list} FROM {_log(table)} WHERE seq > {mark:d}"
    )
    rows = select_rows(cur, table)
    live = cur.sql(f"SELECT r.* FROM ({rows}) r SEMI JOIN ({touched}) k USING ({key_list})")
    live_table = live.to_arrow_table()
    gone = cur.sql(
        f"SELECT k.* FROM ({touched}) k ANTI JOIN main.{_ident(table)} USING ({key_list})"
    )
    return live_table, gone.to_arrow_table()


def dynamic_tables(cur: duckdb.DuckDBPyConnection) -> list[DynamicDefinition]:
    """Every dynamic table with what an engine needs to refresh it in the lake."""
    rows = cur.execute(
        "SELECT name, definition, freshness, sources, coalesce(watermark, 0), "
        "json_extract(plan, '$.key_positions')::INTEGER[], spark_portable, spark_reason "
        "FROM wanka.dynamic_tables ORDER BY name"
    ).fetchall()
    return [
        DynamicDefinition(
            r[0], r[1], r[2], list(r[3] or []), list(r[5] or []), int(r[4]), r[6], r[7]
        )
        for r in rows
    ]


def write_definitions(lake: Path, definitions: list[DynamicDefinition]) -> None:
    write_json_atomically(lake / WANKA_DIR / DEFINITIONS, [asdict(d) for d in definitions])


def read_definitions(lake: Path) -> list[DynamicDefinition]:
    """The dynamic tables recorded in the lake; none before the first export."""
    path = lake / WANKA_DIR / DEFINITIONS
    if not path.is_file():
        return []
    return [DynamicDefinition(**d) for d in json.loads(path.read_text())]
