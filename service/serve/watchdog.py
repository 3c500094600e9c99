"""One thread that interrupts queries past their time limit, for every session.

A `threading.Timer` per query costs a thread start each time (~0.2 ms, more under load, and
serialised by the GIL when 50 clients ask at once); one sleeping thread with a heap of
deadlines costs a heap push and a notify.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Watchdog:
    """Call `action()` once `limit_s` has passed, unless disarmed first."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int]] = []
        self._actions: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, limit_s: float, action: Callable[[], None]) -> int:
        """Schedule `action`; returns the ticket that disarms it."""
        ticket = next(self._ids)
        with self._wake:
            self._actions[ticket] = action
            heapq.heappush(self._heap, (time.monotonic() + limit_s, ticket))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="wanka-watchdog", daemon=True
                )
                self._thread.start()
            elif self._heap[0][1] == ticket:
                self._wake.notify()  # the new deadline is the earliest: wake up sooner
        return ticket

    def disarm(self, ticket: int) -> None:
        """Cancel a ticket (a no-op once it fired)."""
        with self._wake:
            self._actions.pop(ticket, None)

    def _run(self) -> None:
        while True:
            due: list[Callable[[], None]] = []
            with self._wake:
                while self._heap and self._heap[0][1] not in self._actions:
                    heapq.heappop(self._heap)  # disarmed
                if not self._heap:
                    self._wake.wait()
                    continue
                deadline, ticket = self._heap[0]
                wait_s = deadline - time.monotonic()
                if wait_s > 0:
                    self._wake.wait(wait_s)
                    continue
                heapq.heappop(self._heap)
                action = self._actions.pop(ticket, None)
                if action is not None:
                    due.append(action)
            for action in due:
                action()  # outside the lock: an interrupt may take a moment


#: The process's watchdog, shared by every session.
WATCHDOG = Watchdog()
