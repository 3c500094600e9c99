"""One thread that interrupts queries past their time limit, for every session.

A `threading.Timer` per query costs a thread start each time (~0.2 ms, more under load, and
serialised by the GIL when 50 clients ask at once). A heap guarded by one lock costs less but
made every query take that lock twice: with 50 pgwire connections, 72 % of the threads' samples
waited for it (py-spy) at ~730 queries/s. So arming and disarming take no lock: `arm` appends to a
list and `disarm` drops a dict entry (each atomic under the GIL); the watchdog thread moves new
deadlines into its heap when it wakes, and is woken only when a deadline earlier than the one it
sleeps to arrives — never with the usual equal time limits.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable

#: The watchdog looks at new deadlines at least this often (it drops disarmed ones then).
TICK_S = 1.0


class Watchdog:
    """Call `action()` once `limit_s` has passed, unless disarmed first."""

    def __init__(self) -> None:
        self._actions: dict[int, Callable[[], None]] = {}
        self._new: list[tuple[float, int]] = []  # armed since the thread last looked
        self._heap: list[tuple[float, int]] = []  # the thread's own
        self._next = math.inf  # the deadline the thread sleeps until
        self._ids = itertools.count()
        self._wake = threading.Event()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None

    def arm(self, limit_s: float, action: Callable[[], None]) -> int:
        """Schedule `action`; returns the ticket that disarms it."""
        ticket = next(self._ids)
        deadline = time.monotonic() + limit_s
        self._actions[ticket] = action
        self._new.append((deadline, ticket))  # before reading _next: see _run
        if self._thread is None:
            self._started()
        if deadline < self._next:
            self._wake.set()
        return ticket

    def disarm(self, ticket: int) -> None:
        """Cancel a ticket (a no-op once it fired)."""
        self._actions.pop(ticket, None)

    def _started(self) -> None:
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="wanka-watchdog", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.clear()
            for action in self._due():
                action()
            # set _next, then look for arms once more: an arm either sees the new _next (and
            # wakes us if earlier) or appended before this look (and is taken now)
            self._next = self._heap[0][0] if self._heap else math.inf
            if self._new:
                continue
            self._wake.wait(min(self._next - time.monotonic(), TICK_S))

    def _due(self) -> list[Callable[[], None]]:
        """Take the new deadlines, drop disarmed ones, and pop the actions that are due."""
        heap, actions = self._heap, self._actions
        while self._new:
            heapq.heappush(heap, self._new.pop())
        if len(heap) > 2 * len(actions) + 1024:  # mostly disarmed: rebuild without them
            heap[:] = [entry for entry in heap if entry[1] in actions]
            heapq.heapify(heap)
        now, due = time.monotonic(), []
        while heap and (heap[0][1] not in actions or heap[0][0] <= now):
            _, ticket = heapq.heappop(heap)
            action = actions.pop(ticket, None)
            if action is not None:
                due.append(action)
        return due


#: The process's watchdog, shared by every session.
WATCHDOG = Watchdog()
