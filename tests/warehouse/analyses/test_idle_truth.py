"""idle_gpu_jobs against the simulator's truth: on a simulated cluster whose jobs leave GPUs
idle (warehouse/simulate/idle.py), the analysis lists exactly the jobs truth/idle_gpus.csv says
left a GPU idle long enough, with their idle GPUs and idle GPU-hours (precision and recall 1).

What the warehouse can see sets "long enough": a GPU sampled n times at interval Δ is credited
with n·Δ seconds (job_gpu_usage_daily: span × n / (n − 1)), so one sample is no time at all."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.demo_clusters import TINY
from warehouse.analyses import run_analysis_table
from warehouse.demo import build_demo
from warehouse.kernel.engine import Engine
from warehouse.simulate import simulate_cluster, write_formats

#: 256 GPUs for an hour at one-minute scrapes, one single-host job in six idle and a third of
#: the multi-GPU jobs with idle GPUs: dozens of idle rows of every length, no faults.
IDLE = replace(
    TINY.config, gpus=256, hours=1.0, seed=12, faults=0, idle_job_share=1 / 6, idle_gpu_share=1 / 3
)


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Engine, list[dict[str, str]]]]:
    folder = tmp_path_factory.mktemp("idle")
    write_formats(simulate_cluster(IDLE), folder, kinds=("truth",))
    with open(folder / "truth" / "idle_gpus.csv", newline="") as f:
        truth = list(csv.DictReader(f))
    with Engine(str(folder / "w.duckdb")) as engine:
        build_demo(engine, IDLE)
        yield engine, truth


def expected(truth: list[dict[str, str]], idle_for_s: float) -> dict[str, tuple[int, float]]:
    """Job -> (idle GPUs, idle GPU-hours) of the truth rows the warehouse can see as idle for at
    least `idle_for_s`."""
    found: dict[str, list[float]] = defaultdict(list)
    for row in truth:
        seconds = float(row["idle_s"])
        if int(row["samples"]) >= 2 and seconds >= idle_for_s:
            found[row["job_id"]].append(seconds)
    return {job: (len(s), round(sum(s) / 3600, 3)) for job, s in found.items()}


def listed(engine: Engine, **params: str) -> dict[str, tuple[int, float]]:
    cur = engine.cursor()
    try:
        rows: list[dict[str, Any]] = run_analysis_table(cur, "idle_gpu_jobs", params).to_pylist()
    finally:
        cur.close()
    assert len({r["job_id"] for r in rows}) == len(rows)
    return {r["job_id"]: (r["idle_gpus"], r["idle_gpu_hours"]) for r in rows}


@pytest.mark.parametrize(
    ("params", "idle_for_s"),
    [({}, 30 * 60), ({"idle_minutes": "10"}, 10 * 60), ({"idle_minutes": "0"}, 0.0)],
    ids=["the rule's 30 minutes", "10 minutes", "any idle time"],
)
def test_idle_gpu_jobs_finds_exactly_the_jobs_the_truth_left_idle(
    built: tuple[Engine, list[dict[str, str]]], params: dict[str, str], idle_for_s: float
) -> None:
    engine, truth = built
    want, got = expected(truth, idle_for_s), listed(engine, **params)
    true_positives = set(want) & set(got)
    precision = len(true_positives) / len(got) if got else 0.0
    recall = len(true_positives) / len(want)
    assert len(want) >= 5, "too few idle jobs in the truth to judge"
    assert (precision, recall) == (1.0, 1.0), (set(got) - set(want), set(want) - set(got))
    assert got == want  # and their idle GPUs and idle GPU-hours


def test_both_kinds_are_in_the_truth_and_found(built: tuple[Engine, list[dict[str, str]]]) -> None:
    engine, truth = built
    got = listed(engine, idle_minutes="0")
    kinds = {row["kind"] for row in truth if row["job_id"] in got}
    assert kinds == {"job", "gpus"}


def test_an_idle_gpu_is_not_a_straggler(built: tuple[Engine, list[dict[str, str]]]) -> None:
    """A GPU its job never uses sits 100 % below the job's median SM activity; the straggler
    rule (analysis and health finding) used to call it slow. No fault is injected here."""
    engine, truth = built
    idle_of: dict[str, int] = defaultdict(int)
    for row in truth:
        idle_of[row["job_id"]] += row["kind"] == "gpus"
    cur = engine.cursor()
    try:
        sizes = dict(
            cur.execute("SELECT job_id, count(*) FROM job_gpus GROUP BY job_id").fetchall()
        )
        stragglers = run_analysis_table(cur, "stragglers").to_pylist()
        findings = cur.execute(
            "SELECT host, gpu FROM health_findings WHERE rule = 'straggler'"
        ).fetchall()
    finally:
        cur.close()
    # jobs the rule judges (4 GPUs or more) that leave a minority of their GPUs idle: an idle
    # GPU's window lies far below a median that stays up
    judged = [job for job, n in idle_of.items() if n and sizes.get(job, 0) >= max(4, 2 * n + 1)]
    assert len(judged) >= 2
    assert stragglers == [] and findings == []
