"""What the telemetry store's tests share: a fresh warehouse per test (`eng`); a module that
needs one prepared once defines its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine
