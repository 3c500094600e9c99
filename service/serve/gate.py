"""At most a few queries run their Python at once; the others wait their turn, asleep.

Every face runs each client on a thread of its own, and with 50 threads contending for the GIL
every query pays for the contention: each time a thread gives the GIL up (a DuckDB call, a
socket write) it queues behind the others to get it back, and each handover is a context switch.
Measured in-process on 2 cores, `SELECT 1` run by 50 threads: 1,108 queries/s at 1.22 ms of CPU
each; with at most 2 running at once, 2,166 queries/s at 0.72 ms (1 at once: 1,569, 4: 1,886,
8: 1,365).

A query that is still running after `hold_s` gives its place up (the watchdog thread does it
on its behalf), so a long query never holds short ones back: the gate orders the short work
that contention made expensive and leaves the long work as it was.
"""

from __future__ import annotations

import contextlib
import os
import queue
from collections.abc import Iterator

from service.serve.watchdog import WATCHDOG

#: A query running longer than this no longer counts against the gate.
HOLD_S = 0.05


class Gate:
    """A semaphore whose holders let go of it after `hold_s` whether or not they are done."""

    def __init__(self, width: int | None = None, hold_s: float = HOLD_S) -> None:
        self.width = width or max(2, os.cpu_count() or 2)
        self.hold_s = hold_s
        # a queue of place tokens: C get/put, half the cost of threading.Semaphore's Condition
        self._places: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(self.width):
            self._places.put(None)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for a place, hold it for the block (or `hold_s`, whichever is shorter)."""
        self._places.get()
        held = [True]  # popped exactly once: by the block's end or by the watchdog
        ticket = WATCHDOG.arm(self.hold_s, lambda: self._leave(held))
        try:
            yield
        finally:
            WATCHDOG.disarm(ticket)
            self._leave(held)

    def _leave(self, held: list[bool]) -> None:
        try:
            held.pop()  # atomic under the GIL: only one caller gets here with a place
        except IndexError:
            return
        self._places.put(None)
