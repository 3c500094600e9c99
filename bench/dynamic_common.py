"""What the dynamic-table benches share: running a statement through the warehouse's query path,
and timing it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import duckdb

from warehouse.query.executor import execute


class Appends(Protocol):
    """Inserts `rows` new telemetry rows under a new batch id (bench_dynamic.Appender)."""

    def append(self, rows: int) -> int: ...


def run(cur: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None) -> int:
    """Run `sql` through the warehouse's query path and drain it; the rows it returned."""
    reader = execute(cur, sql, params)
    return sum(batch.num_rows for batch in reader)


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began
