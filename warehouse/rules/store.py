"""Where rules read and write: PromQL instant queries over the warehouse (`warehouse.promql`)
and samples stored through the telemetry store's one append (`warehouse.tsdb.append`), on one
DuckDB cursor. A recording rule's series and `ALERTS` / `ALERTS_FOR_STATE` land in
prom_samples (a `DCGM_` name with a host in gpu_metrics), so PromQL and SQL read them as any
remote-written series.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import duckdb

from warehouse.ingest.models import ModelNames
from warehouse.kernel.engine import CATALOG
from warehouse.promql import evaluate
from warehouse.promql.plan import PromQLError
from warehouse.remote_write import rows
from warehouse.tsdb.append import append

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs, `__name__` included
#: Queries of a group run at once by the serve process: one per core (planning a translated
#: query is single-threaded; bench_rules measured 2 on 2 cores as the best, 3 and 4 no better)
QUERY_WORKERS = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


class QueryError(Exception):
    """A rule's query that failed: its text is the rule's `lastError`."""


@dataclass(frozen=True)
class Point:
    labels: Labels
    value: float


def labels_of(pairs: dict[str, str]) -> Labels:
    return tuple(sorted(pairs.items()))


class Store:
    """Queries and writes on `cursor`; a query running past `timeout_s` is interrupted. A group
    may run up to `workers` of its independent queries at once, each on a cursor of its own
    (`child`)."""

    def __init__(
        self,
        cursor: duckdb.DuckDBPyConnection,
        timeout_s: float | None = None,
        workers: int = 1,
        guard: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.cursor, self.timeout_s, self.workers = cursor, timeout_s, workers
        #: held around each write (the serve process's write gate); queries run without it
        self.guard = guard or contextlib.nullcontext
        self.models = ModelNames({})

    def child(self) -> Store:
        """A store on a new cursor of the same database, for a query on another thread (in the
        warehouse's catalog, as `Engine.cursor` opens one)."""
        cursor = self.cursor.cursor()
        cursor.execute(f"USE {CATALOG}")
        return Store(cursor, self.timeout_s)

    def query(self, expression: str, time_ms: int) -> list[Point]:
        """The instant vector (or scalar, as one unlabelled point) of `expression` at `time_ms`."""
        try:
            compiled = evaluate.instant(expression, time_ms)
        except PromQLError as error:
            raise QueryError(str(error)) from None
        if compiled.kind == "string":
            raise QueryError("rule result is not a vector or scalar")
        found: list[Any] = self._run(compiled.sql)
        if compiled.kind == "scalar":
            return [Point((), float(v)) for k, v in found if int(k) == 0]
        return [Point(labels_of(json.loads(text or "{}")), float(vs[0])) for text, _, vs in found]

    def _run(self, sql: str) -> list[tuple[object, ...]]:
        timer = None
        if self.timeout_s:
            timer = threading.Timer(self.timeout_s, self.cursor.interrupt)
            timer.start()
        try:
            return self.cursor.execute(sql).fetchall()
        except duckdb.InterruptException:
            raise QueryError(
                f"query timed out in expression evaluation (over {self.timeout_s:g} s)"
            ) from None
        except duckdb.Error as error:
            message = str(error).splitlines()[0]
            raise QueryError(message.removeprefix("Invalid Input Error: ")) from None
        finally:
            if timer is not None:
                timer.cancel()

    def write(
        self, points: Iterable[tuple[Labels, int, float]], stale: Iterable[tuple[Labels, int]] = ()
    ) -> None:
        """Store samples (labels, ms, value) and staleness markers (labels, ms) at once."""
        index: dict[Labels, int] = {}
        series: list[rows.Series] = []
        samples: tuple[list[int], list[int], list[float]] = ([], [], [])
        markers: tuple[list[int], list[int]] = ([], [])

        def sid(labels: Labels) -> int:
            if labels not in index:
                index[labels] = len(series)
                series.append(rows.series_of(dict(labels), self.models))
            return index[labels]

        for labels, ms, value in points:
            samples[0].append(sid(labels))
            samples[1].append(ms)
            samples[2].append(value)
        for labels, ms in stale:
            markers[0].append(sid(labels))
            markers[1].append(ms)
        if not series:
            return
        decoded = rows.assemble(series, samples, markers, len(samples[0]) + len(markers[0]))
        with self.guard():
            append(self.cursor, decoded)
