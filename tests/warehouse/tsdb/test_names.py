"""A statement rewritten to read compressed blocks gives its columns the names DuckDB gives
the statement as written."""

from __future__ import annotations

import pytest

from tests.warehouse.tsdb.test_prune import eng  # noqa: F401  (the fixture)
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import names, prune

BOUND = "ts >= TIMESTAMPTZ '2026-03-01 02:00:00+00'"


@pytest.mark.parametrize(
    "sql",
    [
        f"SELECT host, avg(value), max(value) - min(value) FROM gpu_metrics WHERE {BOUND} "
        "GROUP BY host",
        f"SELECT time_bucket(interval '1 hour', ts), count(*) FROM gpu_metrics WHERE {BOUND} "
        "GROUP BY 1",
        "SELECT time_bucket(INTERVAL 30 MINUTE, bucket), sum(value_sum) / sum(samples) "
        "FROM gpu_metrics_1h GROUP BY ALL",
        f"SELECT *, value * 2 FROM gpu_metrics AS g WHERE {BOUND}",
        f"SELECT g.*, 'x' FROM gpu_metrics AS g WHERE {BOUND}",
        f"WITH h AS (SELECT 1 AS one) SELECT count(*), one FROM gpu_metrics AS g, h "
        f"WHERE g.{BOUND} GROUP BY one",
        f"SELECT count(*) FROM gpu_metrics WHERE {BOUND} UNION ALL SELECT 1",
        f"SELECT value AS v, ts::DATE FROM gpu_metrics WHERE {BOUND} AND metric = 'x'",
        f"SELECT g.host, avg(g.value) FROM gpu_metrics AS g WHERE g.{BOUND} GROUP BY g.host",
    ],
)
def test_a_rewritten_statement_keeps_its_column_names(eng: Engine, sql: str) -> None:  # noqa: F811
    assert prune.rewrite_sql(sql) != sql
    cur = eng.cursor()
    try:
        assert execute(cur, sql).read_all().schema.names == cur.sql(sql).columns
    finally:
        cur.close()


def test_what_duckdb_cannot_parse_has_no_names() -> None:
    assert names.names_of("SELEC 1") is None
    assert names.names_of("SELECT 1; SELECT 2") is None
    assert names.names_of("SELECT a AS b, c, *") == (None, "c", None)
