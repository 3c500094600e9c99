"""The shared watchdog: fires what is due, in deadline order, and never what was disarmed."""

from __future__ import annotations

import threading

from service.serve.watchdog import Watchdog


def test_fires_in_deadline_order_and_skips_disarmed() -> None:
    dog = Watchdog()
    fired: list[str] = []
    done = threading.Event()

    def note(name: str) -> None:
        fired.append(name)
        if name == "last":
            done.set()

    dog.arm(0.20, lambda: note("last"))
    cancelled = dog.arm(0.05, lambda: note("cancelled"))
    dog.arm(0.10, lambda: note("second"))
    dog.arm(0.01, lambda: note("first"))  # earlier than all: wakes the sleeping thread
    dog.disarm(cancelled)
    assert done.wait(5)
    assert fired == ["first", "second", "last"]


def test_many_sessions_share_one_thread() -> None:
    def watchdogs() -> int:
        return sum(t.name == "wanka-watchdog" for t in threading.enumerate())

    before = watchdogs()
    dog = Watchdog()
    tickets = [dog.arm(60, lambda: None) for _ in range(1000)]
    for ticket in tickets:
        dog.disarm(ticket)
    assert watchdogs() == before + 1  # 1,000 deadlines, one new thread
