"""The query path: DuckDB's statement runner and its relation layer give the same results."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.query import executor as query

QUERIES: list[tuple[str, Any]] = [
    ("SELECT 1 AS one", None),
    ("SELECT ? + 1 AS n, ?::VARCHAR AS s", [41, "x"]),
    ("SELECT $a * 2 AS a2, $b AS b", {"a": 21, "b": None}),
    ("SELECT * FROM range(200000) t(i) WHERE i % 3 = 0", None),  # several batches
    ("SELECT host, count(*) AS n FROM nodes GROUP BY host ORDER BY host", None),
    (
        "SELECT 1.5::DOUBLE AS d, 12.345::DECIMAL(9, 3) AS m, DATE '2024-03-01' AS day, "
        "TIMESTAMPTZ '2024-03-01 12:00:00.5+00' AS ts, [1, NULL] AS l, {'k': 'v'} AS st, "
        "INTERVAL 90 MINUTE AS iv, NULL AS nothing",
        None,
    ),
    ("SELECT * FROM range(0) t(i)", None),
    ("FROM nodes SELECT host LIMIT 0", None),
    ("WITH x AS (SELECT 2 AS v) SELECT v * v AS sq FROM x", None),
]


@pytest.fixture(scope="module")
def cur(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouses.engine() as engine:
        engine.con.execute("INSERT INTO nodes (host, cluster) VALUES ('a', 'c'), ('b', 'c')")
        cursor = engine.cursor()
        yield cursor
        cursor.close()


def _both(
    cur: duckdb.DuckDBPyConnection, sql: str, params: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[pa.Table, pa.Table]:
    direct = query.execute(cur, sql, params, batch_rows=10_000).read_all()
    monkeypatch.setattr(query, "DIRECT", False)
    related = query.execute(cur, sql, params, batch_rows=10_000).read_all()
    monkeypatch.setattr(query, "DIRECT", True)
    return direct, related


def test_this_duckdb_has_the_direct_runner() -> None:
    """If an upgrade took it away, queries still run (the relation layer) but slower: say so."""
    assert query.DIRECT, (
        "duckdb.DuckDBPyConnection._submit is gone: see warehouse/query/executor.py"
    )


@pytest.mark.parametrize(("sql", "params"), QUERIES, ids=[q[0][:40] for q in QUERIES])
def test_the_direct_runner_and_the_relation_layer_agree(
    cur: duckdb.DuckDBPyConnection, sql: str, params: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    direct, related = _both(cur, sql, params, monkeypatch)
    assert direct.schema == related.schema
    assert direct.equals(related)


@pytest.mark.parametrize(
    ("sql", "params", "message"),
    [
        ("SELECT no_such_column", None, "Referenced column"),
        ("SELECT * FROM no_such_table", None, "no_such_table"),
        ("SELECT ? + 1", None, "parameter"),
        ("SELECT 1 / 0::INTEGER AS x, 'a'::INTEGER", None, "Conversion Error"),
    ],
)
def test_errors_are_the_same_user_errors_either_way(
    cur: duckdb.DuckDBPyConnection,
    sql: str,
    params: Any,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for direct in (True, False):
        monkeypatch.setattr(query, "DIRECT", direct)
        with pytest.raises(UserError, match=message):
            query.execute(cur, sql, params).read_all()


def test_a_script_runs_every_statement_and_returns_the_last(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    got = query.execute(cur, "CREATE TEMP TABLE s AS SELECT 1 AS a; SELECT a + 1 AS b FROM s")
    assert got.read_all().to_pylist() == [{"b": 2}]
