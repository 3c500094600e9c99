"""Queries known to be quick are answered on the event loop, without a thread hop.

Handing a query to the worker pool and its answer back costs two thread wake-ups and the GIL
changing hands between the loop and the worker each time either gives it up: on 2 cores 35 %
of the serve process's CPU went to switching tasks (perf: `finish_task_switch`) at ~750
`SELECT 1`/s from 32 clients. Run on the loop instead, a query quick enough costs less than the
hop: wrk, 32 clients, medians of three runs alternating: 1,153 against 771 requests/s, 0.78
against 1.42 ms of the server's CPU each.

A text becomes quick once a run of it on the pool read only, answered in one piece and cost
less than `QUICK_S` of the worker's CPU (its own thread's time: waits for the GIL or for a turn
at the gate do not count, so a loaded server still recognises its quick queries), and slow again
once a run costs more than `SLOW_S`. That thread's time misses what DuckDB's own worker threads
do for a parallel query, so a run longer on the clock than the loop's deadline is slow whatever
its thread's CPU (a 30M-row aggregate once showed under 2 ms of its thread's CPU). On the loop
it runs under a deadline of `LOOP_S`: one that takes longer is interrupted (`Moved`), forgotten
as quick, and run again on the pool — it only read, so running it twice changes nothing — so
the loop is never held longer than that (and only once per text that slowed down). /metrics
counts that first run with `outcome="moved"`, not as a failure.

The loop serves every other request's I/O as well (an upload's chunks, a stream's batches), and
each chunk waits for every callback ready before it. So quick queries get at most `SHARE_S` of
each `WINDOW_S` of the loop's time (`LoopShare`); past it they go to the pool as any other.
Without that bound, 64 clients' quick queries filled each turn of the loop: bench_load's 4 MB
DCGM uploads took 7.6 s at the median instead of 0.4 s.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: A run that costs less CPU than this (rendering included) makes its text quick...
QUICK_S = 0.002
#: ...and one that costs more than this makes it slow again. Between the two nothing changes:
#: a run that prepares its statement on a cursor new to it costs more, once per cursor.
SLOW_S = 0.01
#: The longest a query may hold the event loop before it is moved to the pool.
LOOP_S = 0.05
#: A run longer than this on the clock is slow, whatever CPU its own thread used.
SLOW_WALL_S = LOOP_S
#: Quick queries may hold the loop SHARE_S of each WINDOW_S (on average; SHARE_S at most in a row).
WINDOW_S = 0.02
SHARE_S = 0.01
_KEPT = 4096


class Quick:
    """The texts known to be quick (the most recently seen `_KEPT` of them)."""

    def __init__(self) -> None:
        self._texts: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, text: object) -> bool:
        return text in self._texts

    def noted(self, text: str, seconds: float, wall_s: float = 0.0) -> None:
        """A read-only run of `text` answered in one piece took `seconds` of its thread's CPU
        and `wall_s` on the clock."""
        with self._lock:
            if seconds >= SLOW_S or wall_s >= SLOW_WALL_S:
                self._texts.pop(text, None)
                return
            if seconds >= QUICK_S:
                return
            self._texts[text] = None
            self._texts.move_to_end(text)
            if len(self._texts) > _KEPT:
                self._texts.popitem(last=False)

    def forget(self, text: str) -> None:
        with self._lock:
            self._texts.pop(text, None)


QUICK = Quick()


class LoopShare:
    """Quick queries' share of the loop: `share_s` of each `window_s` on average, and at most
    `share_s` in a row (a token bucket: credit accrues at share_s/window_s a second up to
    share_s, each run on the loop spends its wall time, and a run past the credit leaves a debt
    the loop pays off serving the others).

    Used from the loop's own thread only (no lock).
    """

    def __init__(
        self,
        window_s: float = WINDOW_S,
        share_s: float = SHARE_S,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.rate, self.share_s, self.clock = share_s / window_s, share_s, clock
        self._credit = share_s
        self._at = clock()

    def allows(self) -> bool:
        """Whether a quick query may run on the loop now."""
        now = self.clock()
        self._credit = min(self.share_s, self._credit + (now - self._at) * self.rate)
        self._at = now
        return self._credit > 0

    @contextmanager
    def running(self) -> Iterator[None]:
        """Spend the block's wall time from the credit."""
        started = self.clock()
        try:
            yield
        finally:
            self._at = self.clock()  # the credit accrued while it ran is counted here
            self._credit -= (self._at - started) * (1 - self.rate)
