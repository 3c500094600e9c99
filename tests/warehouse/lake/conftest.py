"""The tiny demo warehouse (tests/demo_clusters.py), copied for each module and each test that
changes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.demo_clusters import TINY
from tests.warehouses import Warehouses


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Path:
    """This module's copy: base tables, reference tables, the shipped dynamic tables."""
    return warehouses.demo(TINY, tmp_path_factory.mktemp("lake_demo") / "w.duckdb")


@pytest.fixture
def warehouse(warehouses: Warehouses, tmp_path: Path) -> Path:
    """A copy of the demo warehouse this test may change."""
    return warehouses.demo(TINY, tmp_path / "w.duckdb")
