"""One writer at a time in the serve process: ingest, DML, DDL and refreshes take turns.

Why: a row's batch id is taken when its write starts, and a refresh reads rows with batch ids
above its watermark. A write that started before a refresh but commits after it would carry a
batch id below the watermark that refresh sets, and no incremental refresh would ever see it.
So every write and every refresh passes this gate; readers never do (DuckDB's MVCC serves them
a consistent snapshot while a writer works). A session inside an explicit transaction that
has written keeps the gate until COMMIT or ROLLBACK. Waiting is bounded: a writer that cannot
get in within its time limit fails with an error saying so, and the scheduler skips a pass.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from warehouse.errors import WankaError


class WriterBusy(WankaError):
    """Another writer held the gate for longer than this one may wait."""


class WriteGate:
    """A lock that knows its holder, so a session can keep it across statements."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: object | None = None

    def acquire(self, holder: object, timeout_s: float) -> None:
        """Take the gate for `holder` (a no-op when it holds it already)."""
        if self._holder is holder:
            return
        if not self._lock.acquire(timeout=max(timeout_s, 0.0)):
            raise WriterBusy(
                f"another write (an ingest, a refresh or an open transaction) held the "
                f"database for more than {timeout_s:g} s; try again"
            )
        self._holder = holder

    def release(self, holder: object) -> None:
        """Give the gate back if `holder` has it."""
        if self._holder is holder:
            self._holder = None
            self._lock.release()

    def holds(self, holder: object) -> bool:
        return self._holder is holder

    @contextlib.contextmanager
    def hold(self, holder: object, timeout_s: float) -> Iterator[None]:
        """The gate for the duration of a block (kept if `holder` had it before)."""
        had = self.holds(holder)
        self.acquire(holder, timeout_s)
        try:
            yield
        finally:
            if not had:
                self.release(holder)
