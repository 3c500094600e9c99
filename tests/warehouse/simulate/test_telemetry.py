"""Telemetry: plausible per model, consistent with the job log, reproducible, chunk-proof."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from tests.warehouses import Warehouses
from warehouse.simulate import SimulatedCluster, simulate_cluster
from warehouse.simulate.idle import CONTEXT_MIB
from warehouse.simulate.inventory import load_gpu_specs
from warehouse.simulate.metrics import METRICS
from warehouse.tsdb.append import append

from .conftest import SMALL


def _frame(samples: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(samples.drop_columns(["labels"]))
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(pl.col("host", "uuid", "model", "metric").cast(pl.String))


def _float(value: object) -> float:
    """A float column's aggregate (polars types them as any Python literal or None)."""
    assert isinstance(value, float), value
    return value


@pytest.fixture(scope="module")
def frame(small_samples: pa.Table) -> pl.DataFrame:
    return _frame(small_samples)


def _metric(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    return frame.filter(pl.col("metric") == name)


def test_one_sample_per_gpu_scrape_and_field(small: SimulatedCluster, frame: pl.DataFrame) -> None:
    reporting = sum(n["state"] != "down" for n in small.nodes.to_pylist()) * 8
    assert small.sample_count == reporting * SMALL.steps * len(METRICS) == frame.height
    counts = frame.group_by("ts", "uuid").len()["len"]
    assert counts.min() == counts.max() == len(METRICS)
    assert frame["ts"].n_unique() == SMALL.steps
    assert frame["ts"].min() == SMALL.start


def test_batches_load_into_gpu_metrics_by_name(
    warehouses: Warehouses, small: SimulatedCluster
) -> None:
    batch = next(small.telemetry_batches(max_rows=50_000))
    with warehouses.engine() as eng:
        assert set(batch.schema.names) <= set(eng.table_schema("gpu_metrics").names)
        cur = eng.cursor()
        assert append(cur, pa.Table.from_batches([batch])).gpu == len(batch)
        pods = cur.sql("SELECT count(*) FROM gpu_metrics WHERE labels->>'pod' IS NOT NULL")
        assert pods.fetchall()[0][0] > 0


def test_power_stays_between_idle_and_tdp(frame: pl.DataFrame) -> None:
    specs = load_gpu_specs()
    power = _metric(frame, "DCGM_FI_DEV_POWER_USAGE")
    by_model = power.group_by("model").agg(
        pl.col("value").min().alias("lo"), pl.col("value").max().alias("hi")
    )
    assert by_model.height >= 5
    for model, lo, hi in by_model.iter_rows():
        assert specs[model].idle_w <= lo <= hi <= specs[model].tdp_w, model
        assert hi > 0.6 * specs[model].tdp_w, f"{model} never works hard"


def test_utilisation_is_an_integer_percentage_and_mostly_busy(frame: pl.DataFrame) -> None:
    util = _metric(frame, "DCGM_FI_DEV_GPU_UTIL")["value"]
    assert util.min() == 0 and _float(util.max()) <= 100
    assert (util == util.round(0)).all()
    assert 0.5 < _float((util > 0).mean()) < 1.0
    sm = _metric(frame, "DCGM_FI_PROF_SM_ACTIVE")["value"]
    assert _float(sm.min()) >= 0 and _float(sm.max()) <= 1


def test_busy_gpus_are_exactly_the_jobs_gpus(small: SimulatedCluster, frame: pl.DataFrame) -> None:
    busy = (
        _metric(frame, "DCGM_FI_DEV_GPU_UTIL")
        .group_by("ts", "host")
        .agg((pl.col("value") > 0).sum().alias("busy"))
    )
    observed = {(ts.timestamp(), host): n for ts, host, n in busy.iter_rows() if n}
    expected: Counter[tuple[float, str]] = Counter()
    scrapes = [SMALL.start.timestamp() + k * SMALL.interval_s for k in range(SMALL.steps)]
    for job in small.jobs.to_pylist():
        if job["start_at"] is None:
            continue
        start = job["start_at"].timestamp()
        end = job["end_at"].timestamp() if job["end_at"] else np.inf
        for t in scrapes:
            if start <= t < end:
                for host in job["node_list"]:
                    expected[(t, host)] += job["gpus"] if job["nodes"] == 1 else 8
    plan = small.telemetry  # less the GPUs a job holds and leaves idle (simulate/idle.py)
    assert len(plan.idle_gpus) > 0
    for j, col, _ in plan.idle_gpus.tolist():
        host = plan.host_names[int(plan.col_host[col])].as_py()
        for k in range(int(plan.job_k0[j]), int(plan.job_k1[j])):
            expected[(scrapes[k], host)] -= 1
    assert observed == {key: n for key, n in expected.items() if n}


def test_energy_counter_rises_by_the_power_drawn(frame: pl.DataFrame) -> None:
    wide = (
        frame.filter(
            pl.col("metric").is_in(
                ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_POWER_USAGE"]
            )
        )
        .pivot(on="metric", index=["uuid", "ts"], values="value")
        .sort("uuid", "ts")
    )
    steps = wide.with_columns(
        pl.col("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").diff().over("uuid").alias("mj"),
        pl.col("DCGM_FI_DEV_POWER_USAGE").shift(1).over("uuid").alias("watts_before"),
    ).drop_nulls("mj")
    assert _float(steps["mj"].min()) > 0  # strictly monotone per GPU
    # The counter grows by the power of the scrape before, held for one interval (W·s → mJ).
    expected = (steps["watts_before"] * SMALL.interval_s * 1000).round(0)
    assert _float((steps["mj"] - expected).abs().max()) <= 1


def test_temperatures_and_memory_follow_the_hardware(
    small: SimulatedCluster, frame: pl.DataFrame
) -> None:
    specs = load_gpu_specs()
    wide = frame.pivot(on="metric", index=["uuid", "ts", "model"], values="value")
    assert wide["DCGM_FI_DEV_GPU_TEMP"].is_between(15, 95).all()
    assert (wide["DCGM_FI_DEV_MEMORY_TEMP"] > wide["DCGM_FI_DEV_GPU_TEMP"]).all()
    hot = wide.select(pl.corr("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP")).item()
    assert hot > 0.8
    for model, total in (
        wide.group_by("model")
        .agg((pl.col("DCGM_FI_DEV_FB_USED") + pl.col("DCGM_FI_DEV_FB_FREE")).max())
        .iter_rows()
    ):
        assert total == pytest.approx(specs[model].hbm_gb * 1024, rel=0.02)
    # a GPU no job holds uses no memory; one its job leaves idle, a CUDA context's
    idle = wide.filter(pl.col("DCGM_FI_DEV_GPU_UTIL") == 0)
    memory = idle["DCGM_FI_DEV_FB_USED"]
    plan = small.telemetry
    held_idle = sum(int(plan.job_k1[j] - plan.job_k0[j]) for j, _, _ in plan.idle_gpus.tolist())
    assert held_idle > 0 and (memory == CONTEXT_MIB).sum() == held_idle
    assert ((memory == 0) | (memory == CONTEXT_MIB)).all()
    assert (idle["DCGM_FI_PROF_NVLINK_TX_BYTES"] == 0).all()
    nvlink_peak = _float(wide["DCGM_FI_PROF_NVLINK_TX_BYTES"].max())
    assert nvlink_peak > 1e10  # multi-GPU jobs talk over NVLink


def test_xid_gauge_shows_the_last_code() -> None:
    # GPUs failing every few hours, so that many XIDs land inside the one-hour window.
    cluster = simulate_cluster(replace(SMALL, gpus=128, warmup_hours=2, fatal_xid_per_gpu_h=0.05))
    frame = _frame(pa.Table.from_batches(list(cluster.telemetry_batches())))
    xid = _metric(frame, "DCGM_FI_DEV_XID_ERRORS")
    hits = [
        e for e in cluster.job_events.to_pylist()
        if e["event"].startswith("xid") and e["ts"] >= SMALL.start
    ]  # fmt: skip
    checked = 0
    for event in hits:
        gpu = (pl.col("host") == event["host"]) & (pl.col("gpu") == event["gpu"])
        later = xid.filter(gpu & (pl.col("ts") >= event["ts"])).sort("ts")
        if later.height == 0:  # after the last scrape
            continue
        seen_at = later["ts"][0]
        same_gpu = [o for o in hits if (o["host"], o["gpu"]) == (event["host"], event["gpu"])]
        if any(event["ts"] < o["ts"] <= seen_at for o in same_gpu):
            continue  # a later XID on that GPU overwrote it before the scrape
        assert later["value"][0] == event["value"]
        checked += 1
    assert checked >= 3
    codes = set(xid["value"].unique().to_list())
    assert codes <= {0.0, 13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95}


def test_same_seed_same_samples_other_seed_other_samples(small_samples: pa.Table) -> None:
    again = simulate_cluster(SMALL)
    assert pa.Table.from_batches(list(again.telemetry_batches())).equals(small_samples)
    other = simulate_cluster(replace(SMALL, seed=SMALL.seed + 1))
    assert not other.jobs.equals(again.jobs)
    first = next(other.telemetry_batches(max_rows=10_000)).column("value").to_numpy()
    assert not np.array_equal(first, small_samples["value"].to_numpy()[: len(first)])


def test_chunking_does_not_change_a_sample(
    small: SimulatedCluster, small_samples: pa.Table
) -> None:
    tiny = list(small.telemetry_batches(max_rows=1))
    assert len(tiny) == SMALL.steps  # one whole scrape per batch at least
    odd = list(small.telemetry_batches(max_rows=7 * len(tiny[0]) + 5))
    assert all(len(b) <= 7 * len(tiny[0]) + 5 for b in odd)

    def canonical(table: pa.Table) -> pl.DataFrame:
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame.with_columns(pl.col("uuid", "metric").cast(pl.String)).sort(
            "ts", "metric", "uuid"
        )

    whole = canonical(small_samples)
    for batches in (tiny, odd):
        assert canonical(pa.Table.from_batches(batches)).equals(whole)
