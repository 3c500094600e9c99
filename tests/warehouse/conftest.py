"""One small demo with the real traces, shared by the tests of the analyses and the report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.demo_clusters import SMALL
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine


@pytest.fixture(scope="module")
def demo_db(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses, shared_data: Path
) -> Path:
    """The 256-GPU demo plus the real samples (Philly, Alibaba): built once per run, copied for
    each module, so what one module writes no other sees."""
    path = tmp_path_factory.mktemp("analyses") / "w.duckdb"
    return warehouses.demo(SMALL, path, real_data=shared_data)


@pytest.fixture(scope="module")
def demo_engine(demo_db: Path) -> Iterator[Engine]:
    with Engine(str(demo_db)) as eng:
        yield eng
