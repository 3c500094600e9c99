"""`wanka export --lake DIR`: the warehouse's tables as Delta tables another engine reads.

Incremental and atomic, per table one Delta commit carrying the table's new watermark:

- a table the lake lacks is written whole (`create`);
- rows of batches newer than the lake's watermark are appended (`append`) — the common case:
  telemetry only grows;
- updates and deletes since then (`wanka.table_changes`) are applied with the old rows logged in
  `wanka."changes_<t>"`: a MERGE by key for one-row-per-thing tables (`merge`), a rewrite of the
  affected days for time-series tables (`partitions`); when the log does not hold every changed
  row (no dynamic table read the table, so nothing was copied), the table is rewritten
  (`overwrite`) and the result says why;
- reference tables are rewritten when reloaded; dynamic tables when refreshed past the lake's
  watermark, with their definitions in `_wanka/dynamic_tables.json` for `refresh --engine spark`.

A re-run exports only what is new; an export killed half-way left each table at its last
commit, and the next run starts from there. All reads run in one DuckDB transaction (one
snapshot), so no row lands in two commits or none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from deltalake import write_deltalake

from warehouse.kernel.engine import Engine
from warehouse.kernel.tables import REPLACE_KEYS
from warehouse.lake import layout
from warehouse.lake.delta import PARTITION_COLUMN, TABLE_CONFIG, LakeTable, commit_properties

_DELETED = "__wanka_deleted"


@dataclass(frozen=True)
class Exported:
    """What one table's export did."""

    table: str
    operation: str  # 'create' | 'append' | 'merge' | 'partitions' | 'overwrite' | 'unchanged'
    rows: int
    watermark: int
    reason: str | None = None


def export_lake(engine: Engine, lake: Path) -> list[Exported]:
    """Bring every table of the lake up to the warehouse's current state; one line per table."""
    lake.mkdir(parents=True, exist_ok=True)
    cur = engine.cursor()
    cur.execute("BEGIN TRANSACTION")  # one snapshot for every table
    try:
        done = [_export_base(cur, lake, t) for t in layout.base_tables()]
        done += [_export_reference(cur, lake, t) for t in layout.reference_tables()]
        done += [_export_dynamic(cur, lake, d) for d in layout.dynamic_tables(cur)]
        layout.write_definitions(lake, layout.dynamic_tables(cur))
    finally:
        cur.execute("ROLLBACK")  # read-only: nothing to keep
        cur.close()
    return done


# -- base tables -----------------------------------------------------------------------------


def _export_base(cur: duckdb.DuckDBPyConnection, lake: Path, table: str) -> Exported:
    target = LakeTable(layout.table_path(lake, table))
    mark = target.watermark()
    high = layout.high_watermark(cur, table)
    partitioned = layout.is_partitioned(cur, table)
    if not target.exists:
        rows = _write(
            cur, target, layout.select_rows(cur, table), "overwrite", high, "create", partitioned
        )
        return Exported(table, "create", rows, high)
    if high <= mark:
        return Exported(table, "unchanged", 0, mark)
    changed, logged = layout.changes_since(cur, table, mark)
    if not changed:
        query = layout.select_rows(cur, table, f"batch_id > {mark:d}")
        rows = _write(cur, target, query, "append", high, "append", partitioned)
        return Exported(table, "append", rows, high)
    if logged and table in REPLACE_KEYS:
        return _merge(cur, target, table, mark, high)
    if logged and partitioned:
        days = layout.affected_days(cur, table, mark)
        where = f"CAST(ts AS DATE) IN ({', '.join(_date(d) for d in days)})"
        predicate = f"ts_day IN ({', '.join(_date(d) for d in days)})"
        query = layout.select_rows(cur, table, where)
        rows = _write(cur, target, query, "overwrite", high, "partitions", partitioned, predicate)
        return Exported(table, "partitions", rows, high)
    reason = (
        "its updates/deletes were not logged row by row (no dynamic table reads it)"
        if not logged
        else "it has no key and no time partitions"
    )
    rows = _write(
        cur, target, layout.select_rows(cur, table), "overwrite", high, "overwrite", partitioned
    )
    return Exported(table, "overwrite", rows, high, f"rewritten whole: {reason}")


def _merge(
    cur: duckdb.DuckDBPyConnection, target: LakeTable, table: str, mark: int, high: int
) -> Exported:
    """Upsert the rows of every key touched since `mark`; delete the keys no longer present."""
    keys = REPLACE_KEYS[table]
    live, gone = layout.touched_rows(cur, table, keys, mark)
    source = pa.concat_tables(
        [
            live.append_column(_DELETED, pa.array([False] * live.num_rows)),
            gone.append_column(_DELETED, pa.array([True] * gone.num_rows)),
        ],
        promote_options="default",
    )
    columns = [c for c in live.column_names]
    on = " AND ".join(f's."{k}" = t."{k}"' for k in keys)
    values = {f'"{c}"': f's."{c}"' for c in columns}
    (
        target.open()
        .merge(
            source,
            predicate=on,
            source_alias="s",
            target_alias="t",
            commit_properties=commit_properties(high, "merge", rows=live.num_rows),
        )
        .when_matched_delete(predicate=f"s.{_DELETED}")
        .when_matched_update(updates=values, predicate=f"NOT s.{_DELETED}")
        .when_not_matched_insert(updates=values, predicate=f"NOT s.{_DELETED}")
        .execute()
    )
    return Exported(table, "merge", live.num_rows + gone.num_rows, high)


# -- reference and dynamic tables ---------------------------------------------------------


def _export_reference(cur: duckdb.DuckDBPyConnection, lake: Path, table: str) -> Exported:
    target = LakeTable(layout.table_path(lake, table))
    mark, high = target.watermark(), layout.reload_watermark(cur, table)
    if target.exists and high <= mark:
        return Exported(table, "unchanged", 0, mark)
    rows = _write(cur, target, layout.select_rows(cur, table), "overwrite", high, "overwrite")
    return Exported(table, "overwrite" if mark >= 0 else "create", rows, high)


def _export_dynamic(
    cur: duckdb.DuckDBPyConnection, lake: Path, definition: layout.DynamicDefinition
) -> Exported:
    """A dynamic table's rows as DuckDB last refreshed them (small: aggregates), one commit."""
    target = LakeTable(layout.table_path(lake, definition.name))
    mark = target.watermark()
    if target.exists and definition.watermark <= mark:
        return Exported(definition.name, "unchanged", 0, mark)
    query = layout.select_rows(cur, definition.name, partitioned=False)
    rows = _write(
        cur, target, query, "overwrite", definition.watermark, "overwrite", engine="duckdb"
    )
    return Exported(definition.name, "overwrite", rows, definition.watermark)


# -- writing --------------------------------------------------------------------------------


def _write(
    cur: duckdb.DuckDBPyConnection,
    target: LakeTable,
    query: str,
    mode: str,
    watermark: int,
    operation: str,
    partitioned: bool = False,
    predicate: str | None = None,
    **extra: object,
) -> int:
    """Stream `query`'s rows into one Delta commit; returns the rows written."""
    reader = cur.sql(query).to_arrow_reader(1 << 17)
    counted = [0]

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            counted[0] += batch.num_rows
            yield batch

    data = pa.RecordBatchReader.from_batches(reader.schema, batches())
    options: dict[str, Any] = {
        "mode": mode,
        "partition_by": [PARTITION_COLUMN] if partitioned else None,
        "configuration": TABLE_CONFIG,
        "commit_properties": commit_properties(watermark, operation, **extra),
    }
    if mode == "overwrite":
        options["predicate"] = predicate
        options["schema_mode"] = "overwrite" if predicate is None else None
    write_deltalake(str(target.path), data, **options)
    return counted[0]


def _date(day: object) -> str:
    return "'" + str(day).replace("'", "") + "'"


def describe(result: Exported) -> str:
    """One line for the command's output."""
    line = f"{result.table}: {result.operation}, {result.rows} rows, watermark {result.watermark}"
    return f"{line} ({result.reason})" if result.reason else line
