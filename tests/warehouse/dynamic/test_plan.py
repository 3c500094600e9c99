"""The planner against its golden cases; every expected delta SQL is also run in DuckDB.

For 'groups' plans the expected SQL is the query restricted to the affected groups, run with
the bounds its `Recompute.bounds` reads: over the window (0, max] every group is affected, and
with no new rows and an empty log none is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.warehouse.dynamic.golden import Case, load_cases
from tests.warehouses import Warehouses
from warehouse.dynamic.plan import Aggregate, Append, Full, Groups, Plan, parse_select, plan_query
from warehouse.dynamic.plan.kinds import VERSION, Recompute, from_json, to_json
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

CASES = load_cases("plan.sql")


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        execute(
            engine.con,
            "INSERT INTO gpu_metrics (ts, host, metric, value) "
            "SELECT TIMESTAMPTZ '2026-11-01' + i * INTERVAL 7 MINUTE, 'h' || i % 3, "
            "CASE WHEN i % 2 = 0 THEN 'U' ELSE 'P' END, i FROM range(50) t(i)",
        ).read_all()
        engine.con.execute(
            "INSERT INTO nodes (host, cluster, gpu_model) "
            "SELECT 'h' || i, 'c' || i % 2, 'H100' FROM range(3) t(i)"
        )
        yield engine


def _bounds(eng: Engine, recompute: Recompute, window: dict[str, Any]) -> dict[str, Any]:
    """$lo, $hi and the bounds of the affected time buckets, for a recompute of groups."""
    bounds = eng.con.execute(recompute.bounds, window)
    row = dict(zip([d[0] for d in bounds.description], bounds.fetchall()[0], strict=True))
    row.pop("groups")
    return {**window, **row}


def _delta(plan: Plan) -> tuple[str, Recompute | None]:
    """The SQL a refresh runs over a window (the golden SQL), and its recompute for bounds."""
    if isinstance(plan, Append | Aggregate):
        return plan.delta, None
    assert isinstance(plan, Groups)
    return plan.recompute.groups, plan.recompute


def test_there_are_cases() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.title for c in CASES])
def test_golden(case: Case, eng: Engine) -> None:
    plan = plan_query(parse_select(case.input), "t", eng.con)
    first, *rest = case.expected.splitlines()
    assert f"{plan.kind}: {plan.reason}" == first
    if not rest:
        assert isinstance(plan, Full)
        return
    sql, recompute = _delta(plan)
    assert sql == "\n".join(rest).strip()
    # the delta over (0, max] is the state / the query over every row with a batch id
    hi = eng.con.sql("SELECT max(batch_id) FROM gpu_metrics").fetchall()[0][0]

    def window(lo: int) -> dict[str, Any]:
        values: dict[str, Any] = {"lo": lo, "hi": hi}
        return _bounds(eng, recompute, values) if recompute else values

    delta = eng.con.execute(sql, window(0)).fetchall()
    whole = plan.state if isinstance(plan, Aggregate) else plan.query
    assert sorted(map(repr, delta)) == sorted(map(repr, eng.con.sql(whole).fetchall()))
    assert eng.con.execute(sql, window(hi)).fetchall() == []
    if isinstance(plan, Aggregate):  # recomputing every group's state is the state
        assert plan.recompute is not None
        values = _bounds(eng, plan.recompute, {"lo": 0, "hi": hi})
        groups = eng.con.execute(plan.recompute.groups, values).fetchall()
        assert sorted(map(repr, groups)) == sorted(map(repr, delta))


@pytest.mark.parametrize("case", CASES, ids=[c.title for c in CASES])
def test_plans_round_trip_through_their_stored_json(case: Case, eng: Engine) -> None:
    plan = plan_query(parse_select(case.input), "t", eng.con)
    stored = json.loads(json.dumps(to_json(plan)))
    assert stored["version"] == VERSION and stored["kind"] == plan.kind
    assert from_json(stored) == plan
