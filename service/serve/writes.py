"""One writer at a time in the serve process: ingest, DML, DDL and refreshes take turns.

Why: a row's batch id is taken when its write starts, and a refresh reads rows with batch ids
above its watermark. A write that started before a refresh but commits after it would carry a
batch id below the watermark that refresh sets, and no incremental refresh would ever see it.
So every write and every refresh passes this gate; readers never do (DuckDB's MVCC serves them
a consistent snapshot while a writer works). A session inside an explicit transaction that
has written keeps the gate until COMMIT or ROLLBACK. Waiting is bounded: a writer that cannot
get in within its time limit fails with an error saying so, and the scheduler skips a pass.

Each writer names its kind (`remote_write`, `refresh`, `sql`, ...); /metrics counts, per kind,
the seconds spent waiting for the gate and holding it (`wanka_write_gate_*_seconds_total`), so
an operator can see which writer keeps remote_write waiting.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Iterator

from service.serve.metric_families import WRITE_GATE_HELD, WRITE_GATE_WAIT
from service.serve.metrics import Metrics
from warehouse.errors import WankaError


class WriterBusy(WankaError):
    """Another writer held the gate for longer than this one may wait."""


class WriteGate:
    """A lock that knows its holder, so a session can keep it across statements, and that
    serves its waiters in the order they came: a job that gives the gate back between its
    transactions and asks again queues behind the writers that waited meanwhile (Python's
    Lock would hand it straight back to the thread that let it go)."""

    def __init__(self, metrics: Metrics | None = None) -> None:
        self._changed = threading.Condition()
        self._holder: object | None = None
        self._queue: deque[object] = deque()  # the waiters' tickets, first come first
        self._metrics = metrics
        self._writer = ""  # the holder's kind
        self._since = 0.0  # when the holder took the gate (time.monotonic)

    def acquire(self, holder: object, timeout_s: float, writer: str) -> None:
        """Take the gate for `holder`, a writer of kind `writer` (a no-op when it holds it
        already), once the writers that asked before had their turn."""
        if self._holder is holder:
            return
        asked, ticket = time.monotonic(), object()
        with self._changed:
            self._queue.append(ticket)
            got = self._changed.wait_for(
                lambda: self._holder is None and self._queue[0] is ticket, max(timeout_s, 0.0)
            )
            self._queue.remove(ticket)
            now = time.monotonic()
            if got:
                self._holder, self._writer, self._since = holder, writer, now
            else:
                self._changed.notify_all()  # the next in line may be free to go now
        if self._metrics is not None:
            self._metrics.count(WRITE_GATE_WAIT, now - asked, writer=writer)
        if not got:
            raise WriterBusy(
                f"another write (an ingest, a refresh or an open transaction) held the "
                f"database for more than {timeout_s:g} s; try again"
            )

    def release(self, holder: object) -> None:
        """Give the gate back if `holder` has it."""
        with self._changed:
            if self._holder is not holder:
                return
            held, writer = time.monotonic() - self._since, self._writer
            self._holder = None
            self._changed.notify_all()
        if self._metrics is not None:
            self._metrics.count(WRITE_GATE_HELD, held, writer=writer)

    def holds(self, holder: object) -> bool:
        return self._holder is holder

    @contextlib.contextmanager
    def hold(self, holder: object, timeout_s: float, writer: str) -> Iterator[None]:
        """The gate for the duration of a block (kept if `holder` had it before)."""
        had = self.holds(holder)
        self.acquire(holder, timeout_s, writer)
        try:
            yield
        finally:
            if not had:
                self.release(holder)
