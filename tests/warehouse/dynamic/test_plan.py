"""The planner against its golden cases; every expected delta SQL is also run in DuckDB."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.warehouse.dynamic.golden import Case, load_cases
from warehouse.dynamic.plan import parse_select, plan_query
from warehouse.engine import Engine

CASES = load_cases("plan.sql")


@pytest.fixture(scope="module")
def eng() -> Iterator[Engine]:
    with Engine(":memory:") as engine:
        engine.con.execute(
            "INSERT INTO gpu_metrics (ts, host, metric, value) "
            "SELECT TIMESTAMPTZ '2026-11-01' + i * INTERVAL 7 MINUTE, 'h' || i % 3, "
            "CASE WHEN i % 2 = 0 THEN 'U' ELSE 'P' END, i FROM range(50) t(i)"
        )
        yield engine


def test_there_are_cases() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.title for c in CASES])
def test_golden(case: Case, eng: Engine) -> None:
    plan = plan_query(parse_select(case.input), "t", eng.con)
    first, *rest = case.expected.splitlines()
    assert f"{plan.kind}: {plan.reason}" == first
    if rest:
        assert plan.delta_sql == "\n".join(rest).strip()
        # the delta over (0, max] is the state / the query over every row with a batch id
        hi = eng.con.sql("SELECT max(batch_id) FROM gpu_metrics").fetchall()[0][0]
        delta = eng.con.execute(plan.delta_sql, {"lo": 0, "hi": hi}).fetchall()
        whole = plan.state_sql or plan.query
        assert sorted(map(repr, delta)) == sorted(map(repr, eng.con.sql(whole).fetchall()))
        none = eng.con.execute(plan.delta_sql, {"lo": hi, "hi": hi}).fetchall()
        assert none == []
