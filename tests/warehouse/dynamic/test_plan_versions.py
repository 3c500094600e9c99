"""Plans stored before typed plans (version 1) still load, refresh incrementally and stay right.

fixtures/plans_v1.duckdb.gz was written by wanka at commit 2b52dce (the last main with the
one-record plan layout) with fixtures/make_v1_warehouse.py: one dynamic table per plan kind,
refreshed, then changes left pending (new rows, an UPDATE, a DELETE, a node moved).
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from warehouse.dynamic import catalog
from warehouse.dynamic.history import RefreshResult
from warehouse.dynamic.plan import Aggregate, Append, Full, Groups
from warehouse.dynamic.plan.kinds import VERSION, to_json
from warehouse.dynamic.schedule import Failed, Skipped, run_due
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

FIXTURE = Path(__file__).with_name("fixtures") / "plans_v1.duckdb.gz"
KINDS = {
    "v1_append": Append,
    "v1_rollup": Aggregate,
    "v1_distinct": Groups,
    "v1_join": Groups,
    "v1_full": Full,
    "v1_chain": Groups,
}


@pytest.fixture
def eng(tmp_path: Path) -> Iterator[Engine]:
    path = tmp_path / "v1.duckdb"
    with gzip.open(FIXTURE) as packed, path.open("wb") as out:
        shutil.copyfileobj(packed, out)
    with Engine(str(path)) as engine:
        yield engine


def test_the_fixture_holds_version_1_plans(eng: Engine) -> None:
    stored = eng.con.sql("SELECT name, plan FROM wanka.dynamic_tables ORDER BY name").fetchall()
    assert sorted(name for name, _ in stored) == sorted(KINDS)
    assert all("version" not in json.loads(plan) for _, plan in stored)


def test_version_1_plans_load_as_their_types(eng: Engine) -> None:
    cur = eng.cursor()
    try:
        for name, kind in KINDS.items():
            plan = catalog.load(cur, name).plan
            assert type(plan) is kind, name
            assert to_json(plan)["version"] == VERSION
        join = catalog.load(cur, "v1_join").plan
        assert isinstance(join, Groups) and join.fact_only is not None
        rollup = catalog.load(cur, "v1_rollup").plan
        assert isinstance(rollup, Aggregate) and rollup.recompute is not None
    finally:
        cur.close()


def test_version_1_tables_refresh_incrementally_to_their_query(eng: Engine) -> None:
    cur = eng.cursor()
    try:
        later = datetime.now(UTC) + timedelta(days=1)  # every table is due by then
        outcomes = {o.name: o for o in run_due(cur, later)}
        assert not [o for o in outcomes.values() if isinstance(o, Failed | Skipped)], outcomes
        done = {n: o for n, o in outcomes.items() if isinstance(o, RefreshResult)}  # all of them
        for name in ("v1_rollup", "v1_distinct", "v1_join", "v1_chain"):
            assert done[name].refresh_mode == "incremental", (name, done[name])
        assert done["v1_append"].refresh_mode == "full"  # updated and deleted from: said so
        for name in KINDS:
            query = catalog.load(cur, name).plan.query
            for a, b in ((name, f"({query})"), (f"({query})", name)):
                extra = execute(cur, f"SELECT count(*) FROM (FROM {a} EXCEPT ALL FROM {b})")
                assert extra.read_all().column(0).to_pylist() == [0], name
    finally:
        cur.close()
