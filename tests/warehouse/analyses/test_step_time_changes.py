"""step_time_changes finds the jobs whose step time grew, and the GPU that holds them back.

On simulated clusters with slow GPUs (warehouse/simulate/step_times.py: a job in lock step runs
at its slowest GPU's pace, 1/factor slower from the fault's start) every fault shows with its
size, its start and its GPU, and nothing else does; without faults nothing shows. Hand-made step
logs pin the rule's edges: flat, a step up, a blip shorter than $min_windows, a speed-up, a rise
exactly $min_slower_pct, a job too young for a baseline.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.analyses import analysis_named, run_analysis_table
from warehouse.analyses.catalog import analyses_folder
from warehouse.health.evaluate import truth
from warehouse.kernel.arrow_tables import insert_arrow
from warehouse.kernel.engine import Engine
from warehouse.kernel.transactions import transaction
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.simulate.step_times import LOG_S
from warehouse.tsdb.append import append


def faulty(seed: int, faults: int) -> SimConfig:
    return SimConfig(
        gpus=256, hours=3.0, interval_s=120.0, start=datetime(2026, 11, 1, tzinfo=UTC),
        seed=seed, warmup_hours=12.0, faults=faults, fatal_xid_per_gpu_h=0.0,
    )  # fmt: skip


def analysed(
    warehouses: Warehouses, cfg: SimConfig
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Any]]:
    """The cluster's step_time_changes and stragglers rows, and its slow_gpu faults."""
    cluster = simulate_cluster(cfg)
    with warehouses.engine() as engine:
        cur = engine.cursor()
        insert_arrow(cur, "job_events", cluster.job_events)
        for batch in cluster.telemetry_batches():
            with transaction(cur):
                append(cur, pa.Table.from_batches([batch]))
        changes = run_analysis_table(cur, "step_time_changes").to_pylist()
        stragglers = run_analysis_table(cur, "stragglers").to_pylist()
        cur.close()
    return changes, stragglers, [f for f in truth(cluster) if f["kind"] == "slow_gpu"]


@pytest.mark.parametrize("seed", [1, 3])
def test_every_slow_gpu_shows_as_its_jobs_step_time_change(
    warehouses: Warehouses, seed: int
) -> None:
    changes, stragglers, slow = analysed(warehouses, faulty(seed, faults=3))
    assert len(slow) == 3  # every fault's job is a multi-node Slurm job, which logs step times
    assert sorted(r["job_id"] for r in changes) == sorted(f["job_id"] for f in slow)
    for fault in slow:
        [row] = [r for r in changes if r["job_id"] == fault["job_id"]]
        expected = (1 / (1 - fault["magnitude"]) - 1) * 100
        assert row["slower_pct"] == pytest.approx(expected, abs=2), (fault, row)
        late = (row["since"] - fault["start_at"]).total_seconds()
        assert abs(late) <= 3 * LOG_S, (fault, row)
        assert (row["host"], row["gpu"]) == (fault["host"], fault["gpu"]), (fault, row)
        assert row["windows"] >= 3 and row["step_s"] > row["baseline_step_s"]
        [gpu] = [s for s in stragglers if (s["job_id"], s["host"], s["gpu"]) == (
            fault["job_id"], fault["host"], fault["gpu"])]  # fmt: skip
        assert row["gpu_slower_pct"] == gpu["slower_pct"]  # the stragglers analysis's own run


def test_without_faults_no_job_changes(warehouses: Warehouses) -> None:
    changes, stragglers, slow = analysed(warehouses, faulty(1, faults=0))
    assert (changes, stragglers, slow) == ([], [], [])


def test_the_gpu_is_named_by_the_stragglers_rule_itself() -> None:
    """Both analyses include the one straggler rule (sql/analyses/parts/), so they cannot drift."""
    part = (analyses_folder() / "parts" / "straggler_windows.sql").read_text(encoding="utf-8")
    rule = "\n".join(line for line in part.splitlines() if not line.startswith("--")).strip()
    for name in ("stragglers", "step_time_changes"):
        assert rule in analysis_named(name).sql
        assert "@include" not in analysis_named(name).sql


# -- the rule's edges, on hand-made step logs ----------------------------------------------------

T0 = datetime(2026, 5, 1, tzinfo=UTC)
BASE_S = 2.0


@pytest.fixture(scope="module")
def engine(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as eng:
        yield eng


def changes_of(
    engine: Engine, logs: dict[str, list[float]], params: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """step_time_changes over these step logs alone (one line every 5 minutes from T0)."""
    rows = [
        (job, T0 + timedelta(seconds=LOG_S * (i + 1)), "step_time", step_s, f"line {i + 1}")
        for job, steps in logs.items()
        for i, step_s in enumerate(steps)
    ]
    cur = engine.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        if rows:
            cur.executemany(
                "INSERT INTO job_events (job_id, ts, event, value, detail) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
        found: list[dict[str, Any]] = run_analysis_table(
            cur, "step_time_changes", params
        ).to_pylist()
        return found
    finally:
        cur.execute("ROLLBACK")
        cur.close()


def at(line: int) -> datetime:
    """When log line `line` (1-based) was written: the end of its interval."""
    return T0 + timedelta(seconds=LOG_S * line)


B, UP, SLOW = BASE_S, BASE_S * 1.20, BASE_S * 1.05  # 20 % and exactly 5 % above the baseline
CASES: dict[str, tuple[list[float], list[tuple[float, int, int, int]]]] = {
    # job: its step times; the changes expected: (slower_pct, windows, first line, last line)
    "flat": ([B] * 12, []),
    "step up": ([B] * 4 + [UP] * 8, [(20.0, 8, 5, 12)]),
    "step up, exactly min_windows": ([B] * 6 + [UP] * 3 + [B] * 3, [(20.0, 3, 7, 9)]),
    "blip shorter than min_windows": ([B] * 6 + [UP] * 2 + [B] * 4, []),
    "blips either side of a normal line": ([B] * 3 + [UP] * 2 + [B] + [UP] * 2 + [B] * 2, []),
    "exactly min_slower_pct": ([B] * 3 + [SLOW] * 4, [(5.0, 4, 4, 7)]),
    "just under min_slower_pct": ([B] * 3 + [B * 1.0499] * 6, []),
    "speed-up": ([B] * 3 + [B * 0.7] * 9, []),
    "two changes": ([B] * 3 + [UP] * 3 + [B] * 2 + [B * 1.5] * 4,
                    [(50.0, 4, 9, 12), (20.0, 3, 4, 6)]),
    "slow warm-up line": ([B * 3] + [B] * 3 + [UP] * 3, [(20.0, 3, 5, 7)]),
    "slow from the start": ([UP] * 12, []),
    "too young for a baseline": ([B, B], []),
    "baseline only": ([B, B, UP], []),
}  # fmt: skip


@pytest.mark.parametrize("job", sorted(CASES))
def test_rule_edges(engine: Engine, job: str) -> None:
    steps, expected = CASES[job]
    got = changes_of(engine, {job: steps})
    assert [(r["slower_pct"], r["windows"], r["since"], r["until"]) for r in got] == [
        (pct, n, at(first - 1), at(last)) for pct, n, first, last in expected
    ]
    for row in got:
        # no telemetry, so no straggler to name
        assert (row["job_id"], row["host"], row["gpu"], row["gpu_slower_pct"]) == (job, *[None] * 3)
        assert row["baseline_step_s"] == BASE_S


def test_parameters_move_the_edges(engine: Engine) -> None:
    steps = [B] * 3 + [B * 1.08] * 2 + [B] * 3
    assert changes_of(engine, {"j": steps}) == []
    [row] = changes_of(engine, {"j": steps}, {"min_windows": "2"})
    assert (row["slower_pct"], row["windows"]) == (8.0, 2)
    assert changes_of(engine, {"j": steps}, {"min_windows": "2", "min_slower_pct": "10"}) == []
    # a longer baseline takes in the slow lines; the median of 5 is still the flat 2.0 s
    [row] = changes_of(engine, {"j": [B] * 3 + [UP] * 6}, {"baseline_windows": "5"})
    assert (row["baseline_step_s"], row["windows"], row["since"]) == (B, 4, at(5))


def test_other_events_and_bad_values_are_not_steps(engine: Engine) -> None:
    cur = engine.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        cur.executemany(
            "INSERT INTO job_events (job_id, ts, event, value) VALUES ('j', ?, ?, ?)",
            [(at(i), "step_time", B) for i in range(1, 4)]
            + [(at(i), "checkpoint", 300.0) for i in range(4, 8)]  # seconds a save took
            + [(at(i), "step_time", float(v)) for i, v in ((8, "nan"), (9, "inf"), (10, "nan"))],
        )
        assert run_analysis_table(cur, "step_time_changes").num_rows == 0
    finally:
        cur.execute("ROLLBACK")
        cur.close()


@settings(max_examples=examples(0.4), deadline=None)
@given(
    base_s=st.floats(0.2, 30.0),
    before=st.integers(3, 8),
    rise_pct=st.one_of(st.floats(-40.0, 4.9), st.floats(5.1, 80.0)),
    length=st.integers(1, 8),
    after=st.integers(0, 4),
)
def test_a_step_is_flagged_exactly_when_high_and_long_enough(
    engine: Engine, base_s: float, before: int, rise_pct: float, length: int, after: int
) -> None:
    steps = [base_s] * before + [base_s * (1 + rise_pct / 100)] * length + [base_s] * after
    got = changes_of(engine, {"j": steps})
    if rise_pct < 5 or length < 3:
        assert got == []
        return
    [row] = got
    assert row["slower_pct"] == pytest.approx(rise_pct, abs=0.051)
    assert row["windows"] == length
    assert (row["since"], row["until"]) == (at(before), at(before + length))


def test_the_demo_names_its_slow_gpu(demo_engine: Engine) -> None:
    """The shared demo (one slow GPU) shows it as a step-time change with its GPU."""
    from tests.demo_clusters import SMALL

    [fault] = [f for f in truth(simulate_cluster(SMALL.config)) if f["kind"] == "slow_gpu"]
    cur = demo_engine.cursor()
    try:
        rows = run_analysis_table(cur, "step_time_changes").to_pylist()
    finally:
        cur.close()
    assert [(r["job_id"], r["host"], r["gpu"]) for r in rows] == [
        (fault["job_id"], fault["host"], fault["gpu"])
    ]
