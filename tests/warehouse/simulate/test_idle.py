"""GPUs jobs hold and leave idle (warehouse/simulate/idle.py): drawn at the configured rates,
seeded, reported as an unused GPU reports, never on a job with an injected slow GPU, and
listed in the truth."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from warehouse.simulate import SimConfig, SimulatedCluster, simulate_cluster, write_formats
from warehouse.simulate.config import GPUS_PER_HOST, InvalidConfig
from warehouse.simulate.idle import CONTEXT_MIB, KINDS, idle_summary

from .conftest import SMALL

#: The small cluster with a job in three idle and half the multi-GPU jobs partly idle: enough
#: rows to see every rule at work in 256 GPUs.
IDLE_PRONE = replace(SMALL, idle_job_share=0.3, idle_gpu_share=0.5)


@pytest.fixture(scope="module")
def prone() -> SimulatedCluster:
    return simulate_cluster(IDLE_PRONE)


def rows_by_job(cluster: SimulatedCluster) -> dict[int, list[tuple[int, str]]]:
    """Window job -> its idle (column, kind) rows."""
    found: dict[int, list[tuple[int, str]]] = {}
    for j, col, kind in cluster.telemetry.idle_gpus.tolist():
        found.setdefault(j, []).append((col, KINDS[kind]))
    return found


def test_whole_jobs_are_single_host_and_partial_ones_keep_a_gpu_at_work(
    prone: SimulatedCluster,
) -> None:
    plan = prone.telemetry
    by_job = rows_by_job(prone)
    kinds = {kind for rows in by_job.values() for _, kind in rows}
    assert kinds == {"job", "gpus"}
    for j, rows in by_job.items():
        cols = plan.job_cols[j][plan.job_cols[j] >= 0]
        [kind] = {k for _, k in rows}  # one kind per job
        idle = sorted(c for c, _ in rows)
        assert len(set(idle)) == len(idle) and set(idle) <= set(cols.tolist())
        if kind == "job":
            assert len(plan.job_cols[j]) <= GPUS_PER_HOST and idle == sorted(cols.tolist())
        else:
            assert 1 <= len(idle) <= min(len(cols) - 1, GPUS_PER_HOST)


def test_rates_are_what_the_config_asks_for() -> None:
    """Each job is drawn once: idle as a whole at idle_job_share (single-host jobs), else partly
    idle at idle_gpu_share (multi-GPU jobs); the counts sit within 4 σ of the binomial mean
    (4,096 GPUs, for enough jobs; the telemetry is not drawn)."""
    config = replace(IDLE_PRONE, gpus=4096)
    cluster = simulate_cluster(config)
    plan = cluster.telemetry
    by_job = rows_by_job(cluster)
    whole = {j for j, rows in by_job.items() if rows[0][1] == "job"}
    partly = set(by_job) - whole
    reporting = [c[c >= 0] for c in plan.job_cols]
    single = [j for j, c in enumerate(reporting) if len(c) and len(plan.job_cols[j]) <= 8]
    multi = [j for j, c in enumerate(reporting) if len(c) >= 2 and j not in whole]
    for drawn, eligible, p in (
        (whole, single, config.idle_job_share),
        (partly, multi, config.idle_gpu_share),
    ):
        n = len(eligible)
        assert drawn <= set(eligible) and n >= 100
        assert abs(len(drawn) - n * p) < 4 * math.sqrt(n * p * (1 - p)), (len(drawn), n, p)
    summary = idle_summary(plan, config)
    assert (summary["jobs_idle"], summary["jobs_with_idle_gpus"]) == (len(whole), len(partly))
    assert summary["single_host_jobs"] == len(single)


def test_seeded_and_drawn_on_their_own(prone: SimulatedCluster) -> None:
    again = simulate_cluster(IDLE_PRONE)
    assert np.array_equal(again.telemetry.idle_gpus, prone.telemetry.idle_gpus)
    other = simulate_cluster(replace(IDLE_PRONE, seed=IDLE_PRONE.seed + 1))
    assert not np.array_equal(other.telemetry.idle_gpus, prone.telemetry.idle_gpus)
    # the rates change the idle draws alone: jobs, schedule and the other GPUs' plan stay
    none = simulate_cluster(replace(IDLE_PRONE, idle_job_share=0.0, idle_gpu_share=0.0))
    assert len(none.telemetry.idle_gpus) == 0
    assert none.jobs.equals(prone.jobs) and none.job_events.equals(prone.job_events)
    assert np.array_equal(none.telemetry.util_mean, prone.telemetry.util_mean)


def test_an_idle_gpu_reports_what_an_unused_gpu_reports(prone: SimulatedCluster) -> None:
    plan = prone.telemetry
    samples = pa.Table.from_batches(list(prone.telemetry_batches()))
    step = (pc.cast(samples["ts"], pa.int64()).to_numpy() - plan.start_us) // plan.interval_us
    col_of = {
        (plan.host_names[int(h)].as_py(), int(g)): c
        for c, (h, g) in enumerate(zip(plan.col_host, plan.col_gpu, strict=True))
    }
    col = np.array(
        [
            col_of[key]
            for key in zip(
                pc.cast(samples["host"], pa.string()).to_pylist(),
                samples["gpu"].to_pylist(),
                strict=True,
            )
        ]
    )
    metric = np.array(pc.cast(samples["metric"], pa.string()).to_pylist(), dtype=object)
    value = samples["value"].to_numpy()
    held = np.zeros((plan.steps, plan.columns), dtype=bool)
    for j, c, _ in plan.idle_gpus.tolist():
        held[plan.job_k0[j] : plan.job_k1[j], c] = True
    mask = held[step, col]
    assert mask.any()
    expected = {
        "DCGM_FI_DEV_GPU_UTIL": 0.0,
        "DCGM_FI_PROF_SM_ACTIVE": 0.0,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.0,
        "DCGM_FI_PROF_NVLINK_TX_BYTES": 0.0,
        "DCGM_FI_DEV_FB_USED": CONTEXT_MIB,
    }
    for name, want in expected.items():
        assert set(value[mask & (metric == name)].tolist()) == {want}, name
    # and a GPU at work never reads 0 %
    util = metric == "DCGM_FI_DEV_GPU_UTIL"
    busy = np.zeros((plan.steps, plan.columns), dtype=bool)
    for j in range(len(plan.job_k0)):
        cols = plan.job_cols[j][plan.job_cols[j] >= 0]
        busy[plan.job_k0[j] : plan.job_k1[j], cols] = True
    working = busy[step, col] & ~mask & util
    assert working.any() and (value[working] >= 1).all()


def test_a_job_with_an_injected_slow_gpu_is_never_left_idle() -> None:
    everyone = replace(IDLE_PRONE, idle_gpu_share=1.0, faults=2)
    cluster = simulate_cluster(everyone)
    slow = {f.job for f in cluster.telemetry.faults.truth if f.kind == "slow_gpu"}
    assert slow and not slow & set(rows_by_job(cluster))
    # every other multi-GPU job is (whole share 0.3 aside): the rule spares only those
    partial = {j for j, rows in rows_by_job(cluster).items() if rows[0][1] == "gpus"}
    assert len(partial) > 10


def test_the_truth_lists_every_idle_gpu_with_its_samples(
    prone: SimulatedCluster, tmp_path: Path
) -> None:
    files = write_formats(prone, tmp_path, kinds=("truth",))
    assert tmp_path / "truth" / "idle_gpus.csv" in files["truth"]
    with open(tmp_path / "truth" / "idle_gpus.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    plan = prone.telemetry
    assert len(rows) == len(plan.idle_gpus)
    for row, (j, _, kind) in zip(rows, plan.idle_gpus.tolist(), strict=True):
        held = int(plan.job_k1[j] - plan.job_k0[j])  # no silent host here: every scrape seen
        assert row["kind"] == KINDS[kind] and int(row["samples"]) == held
        assert float(row["idle_s"]) == held * IDLE_PRONE.interval_s
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["idle_gpus"] == idle_summary(plan, IDLE_PRONE)
    assert manifest["config"]["idle_job_share"] == 0.3


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan")])
def test_a_share_outside_0_to_1_is_refused(value: float) -> None:
    with pytest.raises(InvalidConfig, match="idle_job_share"):
        SimConfig(idle_job_share=value)
    with pytest.raises(InvalidConfig, match="idle_gpu_share"):
        SimConfig(idle_gpu_share=value)
