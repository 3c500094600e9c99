"""What the telemetry store's tests share: a fresh warehouse per test (`eng`), one per module for
the examples of a property test (`shared`); a module that needs one prepared once defines its
own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


@pytest.fixture(scope="module")
def shared(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    """One warehouse for every example of a property test in a module (each example starts by
    clearing it)."""
    with warehouses.engine() as engine:
        cursor = engine.cursor()
        yield cursor
        cursor.close()
