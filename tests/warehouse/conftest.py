"""One small demo with the real traces, shared by the tests of the analyses and the report."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from warehouse.demo import build_demo
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig

#: Big enough for checkpoints, XIDs and every job state, with a fault of each kind for the
#: health rules and nccl-tests probes; ~7 s to build on 2 cores.
SMALL = SimConfig(
    gpus=256,
    hours=1.0,
    interval_s=120.0,
    start=datetime(2026, 11, 1, tzinfo=UTC),
    seed=3,
    warmup_hours=24.0,
    faults=1,
    nccl_probe_s=900.0,
)


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """A 256-GPU demo plus the real samples (Philly, Alibaba), built once per test process."""
    path = tmp_path_factory.mktemp("analyses") / "w.duckdb"
    with Engine(str(path)) as eng:
        build_demo(eng, SMALL, real_data=shared_data)
    return path


@pytest.fixture(scope="session")
def demo_engine(demo_db: Path) -> Iterator[Engine]:
    with Engine(str(demo_db)) as eng:
        yield eng
