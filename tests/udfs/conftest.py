"""A DuckDB connection with every model function, shared by the udfs tests."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from udfs import registry


@pytest.fixture(scope="session")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    registry.register(connection)
    yield connection
    connection.close()
