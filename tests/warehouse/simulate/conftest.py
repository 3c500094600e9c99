"""One small simulated cluster shared by the simulator's tests (built once per worker)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from warehouse.simulate import SimConfig, SimulatedCluster, simulate_cluster

#: 256 GPUs (32 hosts in all eight clusters), one hour at one-minute scrapes, a day of history.
SMALL = SimConfig(
    gpus=256, hours=1.0, interval_s=60.0, start=datetime(2026, 11, 1, tzinfo=UTC), seed=7,
    warmup_hours=24.0,
)  # fmt: skip


#: The small cluster with failures a hundred times Llama 3's rate, so some hit jobs.
FAILURE_PRONE = SimConfig(gpus=256, hours=1.0, warmup_hours=24.0, seed=3, fatal_xid_per_gpu_h=2e-3)


@pytest.fixture(scope="session")
def failure_prone() -> SimulatedCluster:
    return simulate_cluster(FAILURE_PRONE)


@pytest.fixture(scope="session")
def small() -> SimulatedCluster:
    return simulate_cluster(SMALL)


@pytest.fixture(scope="session")
def small_samples(small: SimulatedCluster) -> pa.Table:
    """All of the small cluster's telemetry as one table."""
    return pa.Table.from_batches(list(small.telemetry_batches()))
