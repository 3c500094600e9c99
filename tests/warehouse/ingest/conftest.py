"""A fresh warehouse per test, for the ingest tests that do not make their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine
