"""The planner against its golden cases; every expected delta SQL is also run in DuckDB.

For 'groups' plans the expected SQL is the query restricted to the affected groups, run with
the bounds its `bounds_sql` reads: over the window (0, max] every group is affected, and with no
new rows and an empty log none is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.warehouse.dynamic.golden import Case, load_cases
from warehouse.dynamic.plan import Plan, parse_select, plan_query
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
        engine.con.execute(
            "INSERT INTO nodes (host, cluster, gpu_model) "
            "SELECT 'h' || i, 'c' || i % 2, 'H100' FROM range(3) t(i)"
        )
        yield engine


def _params(eng: Engine, plan: Plan, lo: int, hi: int) -> dict[str, Any]:
    """$lo, $hi and, for a recompute of groups, the bounds of the affected time buckets."""
    window: dict[str, Any] = {"lo": lo, "hi": hi}
    if plan.delta_sql or not plan.bounds_sql:
        return window
    bounds = eng.con.execute(plan.bounds_sql, window)
    row = dict(zip([d[0] for d in bounds.description], bounds.fetchall()[0], strict=True))
    row.pop("groups")
    return {**window, **row}


def test_there_are_cases() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.title for c in CASES])
def test_golden(case: Case, eng: Engine) -> None:
    plan = plan_query(parse_select(case.input), "t", eng.con)
    first, *rest = case.expected.splitlines()
    assert f"{plan.kind}: {plan.reason}" == first
    if rest:
        assert (plan.delta_sql or plan.groups_sql) == "\n".join(rest).strip()
        # the delta over (0, max] is the state / the query over every row with a batch id
        hi = eng.con.sql("SELECT max(batch_id) FROM gpu_metrics").fetchall()[0][0]
        sql = plan.delta_sql or plan.groups_sql
        assert sql is not None
        delta = eng.con.execute(sql, _params(eng, plan, 0, hi)).fetchall()
        whole = plan.state_sql or plan.query
        assert sorted(map(repr, delta)) == sorted(map(repr, eng.con.sql(whole).fetchall()))
        none = eng.con.execute(sql, _params(eng, plan, hi, hi)).fetchall()
        assert none == []
        if plan.kind == "aggregate":  # recomputing every group's state is the state
            assert plan.groups_sql is not None
            assert plan.bounds_sql is not None
            bounds = eng.con.execute(plan.bounds_sql, {"lo": 0, "hi": hi})
            row = dict(zip([d[0] for d in bounds.description], bounds.fetchall()[0], strict=True))
            row.pop("groups")
            groups = eng.con.execute(plan.groups_sql, {"lo": 0, "hi": hi, **row}).fetchall()
            assert sorted(map(repr, groups)) == sorted(map(repr, delta))
