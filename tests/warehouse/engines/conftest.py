"""Fixtures of the engine tests: the small demo warehouse and one Spark session per run."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from tests.warehouse.lake.conftest import demo_db, warehouse  # noqa: F401 - shared fixtures


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session for the whole run (it takes 10-25 s to start)."""
    pytest.importorskip("pyspark")
    from warehouse.engines.spark import SMALL_DATA_SETTINGS, spark_session

    session = spark_session("local[1]", config=SMALL_DATA_SETTINGS)
    yield session
    session.stop()


def _value(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int | float | Decimal):
        f = float(v)
        return f if not math.isfinite(f) else float(f"{f:.9g}")
    if isinstance(v, datetime):
        return v.astimezone(UTC) if v.tzinfo else v.replace(tzinfo=UTC)
    if isinstance(v, list | tuple):
        return tuple(_value(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _value(x)) for k, x in v.items()))
    return v


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples, in a canonical order (numbers to 9 significant digits)."""
    out = [tuple(_value(v) for v in r.values()) for r in table.to_pylist()]
    return sorted(out, key=repr)
