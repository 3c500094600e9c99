"""The built-once warehouse files: a copy of the empty warehouse is the file a new `Engine` makes,
and a file is built once per run however often it is asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.run_files import build_once
from tests.warehouses import Warehouses
from warehouse.dynamic.shipped import ensure_shipped
from warehouse.kernel.engine import Engine

#: What the catalog says of the warehouse's own objects.
CATALOG = {
    "tables": "schema_name, table_name, sql FROM duckdb_tables()",
    "views": "schema_name, view_name, sql FROM duckdb_views()",
    "columns": "schema_name, table_name, column_name, column_index, data_type, column_default, "
    "is_nullable FROM duckdb_columns()",
    "constraints": "schema_name, table_name, constraint_type, constraint_text "
    "FROM duckdb_constraints()",
    "indexes": "schema_name, table_name, index_name, sql FROM duckdb_indexes()",
    "macros": "schema_name, function_name, function_type, macro_definition FROM duckdb_functions()",
    # not start_value: a file DuckDB checkpointed (any file wanka closed and opened again) stores
    # a used sequence as starting at its next value; last_value and nextval are the same
    "sequences": "schema_name, sequence_name, min_value, max_value, increment_by, cycle, "
    "last_value FROM duckdb_sequences()",
}


#: Columns that are not timestamps but read the clock all the same.
CLOCKED = {"lag_s"}  # wanka.dynamic_tables: how old the data was when the refresh finished


def snapshot(engine: Engine) -> dict[str, Any]:
    """The schema version, the catalog, every table's rows but what read the clock (when a step
    ran, a reference table loaded, a refresh ended), and each sequence's next value."""
    con = engine.con
    found: dict[str, Any] = {"version": engine.schema_version}
    for name, listing in CATALOG.items():
        rows = con.sql(f"SELECT {listing} WHERE database_name = current_database()").fetchall()
        found[name] = sorted(rows, key=repr)
    tables = {(schema, table) for schema, table, _sql in found["tables"]}
    columns: dict[str, list[str]] = {}
    for schema, table, column, _index, data_type, *_ in found["columns"]:
        if (schema, table) in tables:
            kept = columns.setdefault(f'"{schema}"."{table}"', [])
            if not data_type.startswith("TIMESTAMP") and column not in CLOCKED:
                kept.append('"' + column.replace('"', '""') + '"')
    for table, kept in columns.items():
        found[table] = con.sql(f"SELECT {', '.join(kept)} FROM {table} ORDER BY ALL").fetchall()
    for schema, sequence, *_ in found["sequences"]:
        name = f"{schema}.{sequence}"
        found[f"nextval {name}"] = con.sql(f"SELECT nextval('{name}')").fetchall()
    return found


@pytest.mark.parametrize("shipped", [False, True], ids=["as Engine makes it", "as Server does"])
def test_a_copy_of_the_empty_warehouse_is_the_file_a_new_engine_makes(
    warehouses: Warehouses, tmp_path: Path, shipped: bool
) -> None:
    with Engine(str(tmp_path / "new.duckdb")) as new:
        if shipped:
            assert ensure_shipped(new)
        made = snapshot(new)
    with Engine(str(warehouses.empty(tmp_path / "copy.duckdb", shipped=shipped))) as copy:
        if shipped:
            assert ensure_shipped(copy) == []  # nothing left for Server to do
        copied = snapshot(copy)
    assert made["version"] > 0 and made['"wanka"."reference_loads"']  # something to compare
    assert copied == made


def test_an_engine_over_a_copy_is_its_own(warehouses: Warehouses) -> None:
    with warehouses.engine() as one, warehouses.engine() as other:
        assert one.path != other.path
        one.con.execute("INSERT INTO sites (site) VALUES ('alpha')")
        assert other.con.sql("SELECT count(*) FROM sites").fetchall() == [(0,)]
    assert not Path(one.path).exists()


def test_a_file_is_built_once_per_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    built: list[Path] = []

    def build(path: Path) -> None:
        built.append(path)
        path.write_text("built")

    name = f"once-{tmp_path_factory.getbasetemp().name}.txt"  # one per xdist worker
    first = build_once(tmp_path_factory, name, build)
    assert build_once(tmp_path_factory, name, build) == first
    assert len(built) == 1 and first.read_text() == "built"


def test_a_failed_build_leaves_nothing_to_reuse(tmp_path_factory: pytest.TempPathFactory) -> None:
    name = f"failing-{tmp_path_factory.getbasetemp().name}.txt"

    def fail(path: Path) -> None:
        path.write_text("half")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError, match="the build failed"):
        build_once(tmp_path_factory, name, fail)

    def build(path: Path) -> None:
        path.write_text("whole")

    assert build_once(tmp_path_factory, name, build).read_text() == "whole"
