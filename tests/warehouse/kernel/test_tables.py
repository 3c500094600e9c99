"""The table registry agrees with the database the schema builds, and refuses bad headers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from tests.warehouses import Warehouses
from warehouse.kernel import catalog, tables
from warehouse.tsdb import relations


@pytest.fixture(scope="module")
def con(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouses.engine() as engine:
        yield engine.con


def _one_column(con: duckdb.DuckDBPyConnection, sql: str, *params: object) -> set[str]:
    return {r[0] for r in con.execute(sql, list(params)).fetchall()}


def test_every_table_of_the_schema_is_declared(con: duckdb.DuckDBPyConnection) -> None:
    found = _one_column(
        con,
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' UNION ALL SELECT view_name FROM duckdb_views() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal",
    )
    assert found == {t.name for t in tables.declared()}


def test_tracked_means_batch_ids_and_change_triggers(con: duckdb.DuckDBPyConnection) -> None:
    triggers = _one_column(
        con, "SELECT table_name FROM duckdb_triggers() WHERE trigger_name LIKE '%_changes_%'"
    )
    defaults = _one_column(
        con,
        "SELECT table_name FROM duckdb_columns() WHERE database_name = current_database() "
        "AND column_name = 'batch_id' AND column_default LIKE '%nextval%'",
    )
    # gpu_metrics is a view (sql/schema/0012): its samples table carries what it did
    stored = {relations.VIEW if t == "gpu_samples" else t for t in triggers | defaults}
    assert {t for t in triggers} - {"gpu_samples"} | {relations.VIEW} == stored
    assert triggers == defaults
    assert stored == tables.TRACKED
    assert len(tables.TRACKED) >= 9


def test_keys_are_columns_and_references_are_the_shipped_csvs(
    con: duckdb.DuckDBPyConnection,
) -> None:
    for table, key in tables.REPLACE_KEYS.items():
        columns = _one_column(
            con,
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = ?",
            table,
        )
        assert set(key) <= columns, (table, key)
    assert {ref.table for ref in catalog.reference_tables()} == tables.REFERENCE
    assert set(tables.DEMO) <= set(tables.LAKE)
    assert tables.REPLACE_KEYS["job_steps"] == ("job_id", "step_id")


def test_unknown_roles_and_misplaced_headers_name_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"x\.sql:3: unknown table role 'trackd'"):
        tables.parse_roles("t", "trackd; demo", "x.sql:3")
    folder = tmp_path / "schema"
    folder.mkdir()
    (folder / "0001_x.sql").write_text("-- table a: demo\nCREATE TABLE b (x INTEGER);\n")
    with pytest.raises(ValueError, match=r"0001_x\.sql:1: `-- table a:` must stand right"):
        tables.declared_in(catalog.migrations(folder))
