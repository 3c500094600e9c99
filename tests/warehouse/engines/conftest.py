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


class Close(float):
    """A number equal to another within 1e-9 relative: sums folded in another order (in parts,
    or by another engine) may differ in their last bits. Sorted by its first 7 digits."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and math.isclose(self, other, rel_tol=1e-9, abs_tol=1e-12)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = float.__hash__

    def __repr__(self) -> str:
        return f"{float(self):.7g}"


def _value(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int | float | Decimal):
        f = float(v)
        return f if not math.isfinite(f) else Close(f)
    if isinstance(v, datetime):
        return v.astimezone(UTC) if v.tzinfo else v.replace(tzinfo=UTC)
    if isinstance(v, list | tuple):
        return tuple(_value(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _value(x)) for k, x in v.items()))
    return v


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples, in a canonical order (numbers equal within 1e-9 relative)."""
    out = [tuple(_value(v) for v in r.values()) for r in table.to_pylist()]
    return sorted(out, key=repr)
