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
an operator can see which writer keeps remote_write waiting, and a hold of `SLOW_HOLD_S` or
more is logged at info level with its writer and time.

A writer may say how old the samples it wrote are (`oldest_ms`: the oldest sample time, ms);
whoever listens (`listen`) hears each writer's kind and that time as it gives the gate back, or
None from a writer that did not say. The PromQL result cache empties on a write into its past
(warehouse/promql/result_cache.py).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from service.serve.metric_families import WRITE_GATE_HELD, WRITE_GATE_WAIT
from service.serve.metrics import Metrics
from warehouse.errors import WankaError

log = logging.getLogger("wanka.writes")
#: A writer that held the gate this long is logged at info level: everyone else waited for it.
SLOW_HOLD_S = 2.0


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
        #: the oldest sample time the holder's writes said they wrote; None once one did not say
        self._oldest: int | None = None
        self._listeners: list[Callable[[str, int | None], None]] = []

    def listen(self, listener: Callable[[str, int | None], None]) -> None:
        """Call `listener(writer kind, oldest sample time in ms or None)` at each release."""
        self._listeners.append(listener)

    def acquire(
        self, holder: object, timeout_s: float, writer: str, oldest_ms: int | None = None
    ) -> None:
        """Take the gate for `holder`, a writer of kind `writer` (a no-op when it holds it
        already), once the writers that asked before had their turn; `oldest_ms`: the oldest
        sample time it will write (None: it cannot say)."""
        if self._holder is holder:
            self._note(oldest_ms)
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
                self._oldest = oldest_ms
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
            oldest = self._oldest
            self._holder = None
            self._changed.notify_all()
        if self._metrics is not None:
            self._metrics.count(WRITE_GATE_HELD, held, writer=writer)
        if held >= SLOW_HOLD_S:
            log.info(
                "write gate held %.1f s by %s", held, writer,
                extra={"writer": writer, "seconds": round(held, 3)},
            )  # fmt: skip
        for listener in self._listeners:
            listener(writer, oldest)

    def _note(self, oldest_ms: int | None) -> None:
        """The holder writes again, samples from `oldest_ms` on (None: it cannot say)."""
        if oldest_ms is None or self._oldest is None:
            self._oldest = None  # one write that cannot say makes the whole hold unknown
        else:
            self._oldest = min(self._oldest, oldest_ms)

    def holds(self, holder: object) -> bool:
        return self._holder is holder

    @contextlib.contextmanager
    def hold(
        self, holder: object, timeout_s: float, writer: str, oldest_ms: int | None = None
    ) -> Iterator[None]:
        """The gate for the duration of a block (kept if `holder` had it before)."""
        had = self.holds(holder)
        self.acquire(holder, timeout_s, writer, oldest_ms)
        try:
            yield
        finally:
            if not had:
                self.release(holder)
