"""Portable SQL: golden rewrite rules and problems, and the verdict recorded at CREATE."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.warehouse.engines.golden import Case, load_cases
from warehouse.engines.portable import NotPortable, portability_problems, to_spark
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

CASES = load_cases("portable.sql")


@pytest.mark.parametrize("case", CASES, ids=[c.title for c in CASES])
def test_golden(case: Case) -> None:
    assert sorted(portability_problems(case.input)) == sorted(case.problems)
    if case.problems:
        with pytest.raises(NotPortable):
            to_spark(case.input)
    else:
        assert to_spark(case.input) == case.expected


def test_every_case_is_either_sql_or_problems() -> None:
    assert len(CASES) >= 12
    assert all(bool(c.expected) != bool(c.problems) for c in CASES)


def test_create_records_whether_spark_runs_the_table(fresh_db: Path) -> None:
    with Engine(str(fresh_db)) as engine:
        cur = engine.cursor()
        for name, query in (
            ("portable", "SELECT host, count(*) AS n FROM gpu_metrics GROUP BY host"),
            ("duck_only", "SELECT approx_count_distinct(gpu) AS g FROM gpu_metrics"),
        ):
            execute(
                cur, f"CREATE DYNAMIC TABLE {name} WITH (freshness = '1 hour') AS {query}"
            ).read_all()
        rows = dict(
            (r[0], (r[1], r[2]))
            for r in cur.execute(
                "SELECT name, spark_portable, spark_reason FROM wanka.dynamic_tables"
            ).fetchall()
        )
    assert rows["portable"] == (True, None)
    portable, reason = rows["duck_only"]
    assert portable is False and "APPROX_COUNT_DISTINCT" in reason and "count(DISTINCT" in reason
