"""The demo's scale: 10,000 GPUs, an hour at one-minute scrapes, built in seconds."""

from __future__ import annotations

import math
import time

import numpy as np
import polars as pl
import pytest

from warehouse.simulate import SimConfig, SimulatedCluster, simulate_cluster
from warehouse.simulate.idle import idle_summary
from warehouse.simulate.metrics import METRICS

DEMO = SimConfig(gpus=10_000, hours=1.0, interval_s=60.0)


def _float(value: object) -> float:
    """A float column's aggregate (polars types them as any Python literal or None)."""
    assert isinstance(value, float), value
    return value


@pytest.fixture(scope="module")
def demo() -> tuple[SimulatedCluster, float]:
    began = time.perf_counter()
    cluster = simulate_cluster(DEMO)
    return cluster, time.perf_counter() - began


def test_demo_is_1250_hosts_and_thousands_of_jobs_in_seconds(
    demo: tuple[SimulatedCluster, float],
) -> None:
    cluster, seconds = demo
    assert cluster.nodes.num_rows == 1_250
    assert (
        cluster.clusters["gpus"].to_pylist() and sum(cluster.clusters["gpus"].to_pylist()) == 10_000
    )
    assert cluster.jobs.num_rows >= 1_000
    assert seconds < 15, f"simulate_cluster took {seconds:.1f} s"
    reporting = sum(s != "down" for s in cluster.nodes["state"].to_pylist()) * 8
    assert cluster.sample_count == reporting * 60 * len(METRICS)


def test_demo_window_is_busy_and_the_gen4_slots_cap_nic_traffic(
    demo: tuple[SimulatedCluster, float],
) -> None:
    cluster, _ = demo
    batch = next(cluster.telemetry_batches())  # the first dozen scrapes
    samples = pl.from_arrow(batch.select(["host", "metric", "value"]))
    assert isinstance(samples, pl.DataFrame)
    frame = samples.with_columns(pl.col("host", "metric").cast(pl.String))
    util = frame.filter(pl.col("metric") == "DCGM_FI_DEV_GPU_UTIL")["value"]
    assert 0.75 <= _float((util > 0).mean()) <= 0.97
    nodes = pl.from_arrow(cluster.nodes.select(["host", "nic_model", "pcie_gen"]))
    assert isinstance(nodes, pl.DataFrame)
    tx = frame.filter(pl.col("metric") == "DCGM_FI_PROF_PCIE_TX_BYTES").join(
        nodes,
        on="host",
    )
    cx7 = tx.filter(pl.col("nic_model") == "ConnectX-7")
    gen4_peak = _float(cx7.filter(pl.col("pcie_gen") == 4)["value"].max())
    gen5_peak = _float(cx7.filter(pl.col("pcie_gen") == 5)["value"].max())
    slot_gen4 = 0.9 * 31.51e9
    assert gen4_peak <= slot_gen4 + 1e6
    assert gen5_peak > slot_gen4 * 1.2
    assert np.isfinite(cx7["value"].to_numpy()).all()


def test_demo_has_jobs_that_leave_gpus_idle(demo: tuple[SimulatedCluster, float]) -> None:
    """The 10,000-GPU demo used to keep every GPU of every job at 1 % or more, so
    idle_gpu_jobs, jobstats' idle notes and the report's waste section had nothing to show."""
    cluster, _ = demo
    summary = idle_summary(cluster.telemetry, cluster.config)
    for drawn, eligible, share in (
        ("jobs_idle", "single_host_jobs", DEMO.idle_job_share),
        ("jobs_with_idle_gpus", "multi_gpu_jobs", DEMO.idle_gpu_share),
    ):
        n = summary[eligible]
        assert summary[drawn] > 0
        assert abs(summary[drawn] - n * share) < 4 * math.sqrt(n * share * (1 - share)), summary
