"""The downsampling tiers equal the raw recompute after any inserts, updates, deletes and
compactions (of samples and of the tiers' own rows), in any order."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.samples import START, insert_samples
from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import compact, tiers

sample = st.tuples(
    st.integers(0, 150),  # seconds × 20 after the start: several samples a minute, some equal
    st.sampled_from(["a", "b"]),
    st.sampled_from(["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"]),
    st.one_of(st.none(), st.integers(-50, 50).map(float)),
)
step = st.one_of(
    st.tuples(st.just("insert"), st.lists(sample, min_size=1, max_size=12)),
    st.tuples(st.just("delete"), st.integers(-50, 50)),
    st.tuples(st.just("update"), st.integers(-50, 50)),
    st.tuples(st.just("move"), st.integers(-50, 50)),
    st.tuples(st.just("truncate"), st.none()),
    st.tuples(st.just("compact"), st.none()),  # the window, and its tier rows, into blocks
)


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


_CHANGES = {
    "delete": "DELETE FROM gpu_metrics WHERE value < ?",
    "update": "UPDATE gpu_metrics SET value = -value WHERE value > ?",
    # into another minute, maybe another hour
    "move": "UPDATE gpu_metrics SET ts = ts + INTERVAL 50 MINUTE WHERE value = ?",
}


def _apply(eng: Engine, action: str, arg: object) -> None:
    cur = eng.cursor()
    if action == "insert":
        assert isinstance(arg, list)
        insert_samples(
            cur,
            [
                {
                    "ts": START + timedelta(seconds=20 * s),
                    "host": h,
                    "gpu": 0,
                    "metric": metric,
                    "value": v,
                }
                for s, h, metric, v in arg
            ],
        )
    elif action == "compact":
        compact.compact(cur, now=START + timedelta(days=1))
    elif action in _CHANGES:
        try:
            execute(cur, _CHANGES[action], [arg]).read_all()
        except UserError as error:  # it would change compacted samples: refused, nothing done
            assert "closed windows" in str(error)
    elif action == "truncate":
        execute(cur, "TRUNCATE gpu_metrics").read_all()
    cur.close()


def _same(got: list[tuple[object, ...]], want: list[tuple[object, ...]]) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            if isinstance(a, float) and isinstance(b, float):
                if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9):
                    return False
            elif a != b:
                return False
    return True


@pytest.mark.parametrize("tier", sorted(tiers.RECOMPUTE))
@settings(
    max_examples=examples(0.4),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(step, min_size=1, max_size=8))
def test_a_tier_equals_the_recompute_from_raw_after_every_write(
    eng: Engine, tier: str, steps: list[tuple[str, object]]
) -> None:
    execute(eng.cursor(), "TRUNCATE gpu_metrics").read_all()
    tiers.fold(eng.con)
    order = "ORDER BY bucket, metric, host"
    for action, arg in steps:
        _apply(eng, action, arg)
        tiers.fold(eng.con)
        got = eng.con.sql(f"SELECT * FROM {tier} {order}").fetchall()
        want = eng.con.sql(f"SELECT * FROM ({tiers.RECOMPUTE[tier]}) {order}").fetchall()
        assert _same(got, want), (action, arg, got, want)


def _two_writers(eng: Engine, metric: str) -> tuple[Any, Any]:
    """On an emptied gpu_metrics, two open transactions that each inserted a sample of one new
    label set (value 1 at 10 s, 2 at 20 s): each added a series for it, as neither sees the
    other's."""
    execute(eng.cursor(), "TRUNCATE gpu_metrics").read_all()
    tiers.fold(eng.con)
    first, second = eng.cursor(), eng.cursor()
    insert = (
        "INSERT INTO gpu_metrics (ts, host, metric, value) "
        "VALUES (TIMESTAMPTZ '2026-11-01' + to_seconds(?), 'a', ?, ?)"
    )
    for cur, at, value in ((first, 10, 1), (second, 20, 2)):
        cur.execute("BEGIN TRANSACTION")
        execute(cur, insert, [at, metric, value]).read_all()
    return first, second


def test_writers_only_append_and_a_fold_catches_up_with_several_at_once(eng: Engine) -> None:
    """Two transactions that insert samples of one bucket both commit (neither updates a tier
    row; each adds a series for the new label set, as neither sees the other's); the next fold
    merges the twin series and takes both batches and an UPDATE between them."""
    first, second = _two_writers(eng, "X")
    first.execute("COMMIT")
    second.execute("COMMIT")
    execute(eng.cursor(), "UPDATE gpu_metrics SET value = 5 WHERE value = 1").read_all()
    assert eng.con.sql("SELECT count(*) FROM gpu_metrics_1m").fetchall() == [(0,)]
    assert tiers.fold(eng.con) == 2
    got = "SELECT samples, value_sum, value_min, value_max, value_last FROM gpu_metrics_1m"
    assert eng.con.sql(got).fetchall() == [(2, 7.0, 2.0, 5.0, 2.0)]
    twins = "SELECT count(*) FROM wanka.gpu_series WHERE metric = 'X'"
    assert eng.con.sql(twins).fetchall() == [(1,)]
    assert tiers.fold(eng.con) == 0


def test_a_twin_is_merged_into_a_series_a_fold_took_before(eng: Engine) -> None:
    """The twin's label set was first written by a batch an earlier fold took: the fold that
    takes the twin's batch still finds the first series (it matches the batch's label sets
    against the whole dictionary)."""
    first, second = _two_writers(eng, "Y")
    first.execute("COMMIT")
    assert tiers.fold(eng.con) == 1
    second.execute("COMMIT")
    series = "SELECT count(*) FROM wanka.gpu_series WHERE metric = 'Y'"
    assert eng.con.sql(series).fetchall() == [(2,)]  # twins
    assert tiers.fold(eng.con) == 1
    assert eng.con.sql(series).fetchall() == [(1,)]
    got = "SELECT samples, value_sum, value_min, value_max FROM gpu_metrics_1m"
    assert eng.con.sql(got).fetchall() == [(2, 3.0, 1.0, 2.0)]
