"""What every part of the serve process shares: the one engine, the write gate, the counters
of /metrics and the limits in force.

The parts (auth, sessions, writer, scheduler, feeds) each get the one `Core` rather than the
whole `Server`, so none of them can reach into another; `limits` is read at each use, so a
`Server.apply` of new limits takes effect at the next request without restarting anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import duckdb

from service.serve.metrics import Metrics
from service.serve.settings import Limits
from service.serve.writes import WriteGate

if TYPE_CHECKING:
    from warehouse.kernel.engine import Engine

R = TypeVar("R")
#: A DuckDB cursor, named here so that the parts need not import duckdb (service/ruff.toml).
Cursor = duckdb.DuckDBPyConnection


@dataclass
class Core:
    engine: Engine
    metrics: Metrics
    writes: WriteGate  # ingest, DML, DDL and refreshes take turns (writes.py)
    limits: Limits

    def with_cursor(self, work: Callable[[Cursor], R]) -> R:
        """`work(cursor)` on a cursor of its own, closed afterwards."""
        cur = self.engine.cursor()
        try:
            return work(cur)
        finally:
            cur.close()
