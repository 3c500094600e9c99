"""Injected faults (warehouse/simulate/faults.py): each shows in the telemetry as its truth row
says, the GPUs no fault touches get the very samples they get without faults, and the truth
file lists them."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from warehouse.simulate import SimConfig, SimulatedCluster, simulate_cluster
from warehouse.simulate.config import InvalidConfig
from warehouse.simulate.faults import KINDS
from warehouse.simulate.truth import faults_table, truth_job_ids

CLEAN = SimConfig(gpus=512, hours=4.0, seed=5, warmup_hours=12.0, fatal_xid_per_gpu_h=0.0)
FAULTY = SimConfig(**{**CLEAN.__dict__, "faults": 3})


@pytest.fixture(scope="module")
def pair() -> tuple[SimulatedCluster, SimulatedCluster]:
    return simulate_cluster(CLEAN), simulate_cluster(FAULTY)


def samples(cluster: SimulatedCluster) -> pa.Table:
    return pa.Table.from_batches(list(cluster.telemetry_batches()))


def frame(table: pa.Table, metric: str) -> dict[tuple[str, int, int], float]:
    rows = table.filter(pc.equal(pc.cast(table["metric"], pa.string()), metric))
    ts = pc.cast(rows["ts"], pa.int64()).to_numpy()
    keys = zip(
        pc.cast(rows["host"], pa.string()).to_pylist(),
        rows["gpu"].to_pylist(),
        ts.tolist(),
        strict=True,
    )
    return dict(zip(keys, rows["value"].to_pylist(), strict=True))


def test_every_kind_is_drawn_on_its_own_host(
    pair: tuple[SimulatedCluster, SimulatedCluster],
) -> None:
    faults = pair[1].telemetry.faults.truth
    assert sorted({f.kind for f in faults}) == sorted(KINDS)
    assert all(sum(f.kind == k for f in faults) == 3 for k in KINDS)
    assert len({f.host for f in faults}) == len(faults)
    assert pair[0].telemetry.faults.truth == ()


def test_untouched_gpus_get_the_same_samples(
    pair: tuple[SimulatedCluster, SimulatedCluster],
) -> None:
    clean, faulty = (samples(c) for c in pair)
    touched = {pair[1].telemetry.host_names[f.host].as_py() for f in pair[1].telemetry.faults.truth}

    def keep(table: pa.Table) -> pa.Table:
        hosts = pc.cast(table["host"], pa.string())
        return table.filter(pc.invert(pc.is_in(hosts, pa.array(sorted(touched)))))

    a, b = keep(clean), keep(faulty)
    assert a.num_rows == b.num_rows > 0
    assert a["value"].equals(b["value"]) and a["ts"].equals(b["ts"])
    assert faulty.num_rows == pair[1].sample_count < clean.num_rows == pair[0].sample_count


def test_each_fault_shows_as_its_truth_says(
    pair: tuple[SimulatedCluster, SimulatedCluster],
) -> None:
    clean, faulty = pair
    plan = faulty.telemetry
    a, b = samples(clean), samples(faulty)
    sm_a, sm_b = frame(a, "DCGM_FI_PROF_SM_ACTIVE"), frame(b, "DCGM_FI_PROF_SM_ACTIVE")
    temp_a, temp_b = frame(a, "DCGM_FI_DEV_GPU_TEMP"), frame(b, "DCGM_FI_DEV_GPU_TEMP")
    sbe_b = frame(b, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")
    xid_b = frame(b, "DCGM_FI_DEV_XID_ERRORS")
    hosts_b = set(
        zip(
            pc.cast(b["host"], pa.string()).to_pylist(),
            pc.cast(b["ts"], pa.int64()).to_pylist(),
            strict=True,
        )
    )
    for f in plan.faults.truth:
        host = plan.host_names[f.host].as_py()
        gpu = int(plan.col_gpu[f.col]) if f.col >= 0 else -1
        t0 = plan.start_us + f.k0 * plan.interval_us
        t1 = plan.start_us + (f.k1 - 1) * plan.interval_us
        if f.kind == "slow_gpu":
            times = range(t0, t1, plan.interval_us)
            ratio = [sm_b[(host, gpu, t)] / sm_a[(host, gpu, t)] for t in times
                     if sm_a[(host, gpu, t)] > 0.05]  # fmt: skip
            assert np.median(ratio) == pytest.approx(1 - f.magnitude, abs=0.01)
        elif f.kind == "thermal":
            rise = [
                temp_b[(host, gpu, t)] - temp_a[(host, gpu, t)]
                for t in range(t0, t1, plan.interval_us)
            ]
            assert np.median(rise) == pytest.approx(f.magnitude, abs=1.0)
        elif f.kind == "ecc_climb":
            assert sbe_b[(host, gpu, t1)] - sbe_b[(host, gpu, t0)] >= 0.4 * (f.k1 - f.k0)
            assert xid_b[(host, gpu, t1)] == f.magnitude  # the XID at the end of the climb
        elif f.kind == "silent_host":
            assert (host, t0 - plan.interval_us) in hosts_b and (host, t0) not in hosts_b


def test_the_truth_table_names_them(pair: tuple[SimulatedCluster, SimulatedCluster]) -> None:
    cluster = pair[1]
    table = faults_table(cluster.telemetry, truth_job_ids(cluster.jobs, cluster.clusters))
    assert table.num_rows == 15
    rows = table.to_pylist()
    assert all(r["start_at"] >= CLEAN.start and r["end_at"] > r["start_at"] for r in rows)
    assert all((r["gpu"] is None) == (r["kind"] in ("silent_host", "bad_nic")) for r in rows)
    assert all((r["job_id"] is not None) == (r["kind"] == "slow_gpu") for r in rows)
    assert rows[0]["start_at"].tzinfo is not None and rows[0]["start_at"] < datetime(
        2027, 1, 1, tzinfo=UTC
    )


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="faults"):
        SimConfig(gpus=8, faults=-1)
