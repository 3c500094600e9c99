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


def test_threads_arming_at_once_lose_no_deadline() -> None:
    """Arms take no lock: 8 threads x 2,000 arms and disarms, then every kept one fires."""
    dog = Watchdog()
    fired: list[int] = []
    kept = threading.Barrier(9)

    def work(index: int) -> None:
        for _ in range(2000):
            dog.disarm(dog.arm(60, lambda: fired.append(-1)))
        dog.arm(0.05 + index / 100, lambda: fired.append(index))
        kept.wait()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    kept.wait()
    for thread in threads:
        thread.join()
    deadline = threading.Event()
    for _ in range(100):  # up to 5 s for the last (at 0.12 s) to fire
        if len(fired) == 8:
            break
        deadline.wait(0.05)
    assert sorted(fired) == list(range(8))
