"""A small demo warehouse, built once per session and copied for each test that changes it."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from warehouse.demo import build_demo
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig

SMALL = SimConfig(
    gpus=64,
    hours=1.5,
    interval_s=60.0,
    start=datetime(2026, 11, 1, tzinfo=UTC),
    seed=3,
    warmup_hours=12.0,
)


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lake_demo") / "w.duckdb"
    with Engine(str(path)) as engine:
        build_demo(engine, SMALL)  # base tables, reference tables, the shipped dynamic tables
    return path


@pytest.fixture
def warehouse(demo_db: Path, tmp_path: Path) -> Path:
    """A copy of the demo warehouse this test may change."""
    copy = tmp_path / "w.duckdb"
    shutil.copy(demo_db, copy)
    return copy
