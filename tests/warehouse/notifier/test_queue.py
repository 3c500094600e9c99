"""The queue between evaluation and Alertmanager never blocks: past its capacity the oldest
alerts are dropped and counted; a batch no Alertmanager takes is dropped and counted; an
Alertmanager that cannot be reached costs its own timeout and an error, nothing else."""

from __future__ import annotations

import time

from warehouse.notifier.payload import Outgoing
from warehouse.notifier.queue import Alertmanager, Notifier


def alert(n: int) -> Outgoing:
    return Outgoing({"alertname": "A", "n": str(n)}, {}, 1_000, 0, 241_000, "up == 0")


def test_a_full_queue_drops_the_oldest_and_counts_them() -> None:
    notifier = Notifier([Alertmanager("http://127.0.0.1:1", 0.5)], capacity=3)
    started = time.perf_counter()
    notifier.send([alert(n) for n in range(5)])  # not started: nothing is taken off the queue
    assert time.perf_counter() - started < 0.1  # never waits on an Alertmanager
    assert notifier.queue_length() == 3 and notifier.counts.dropped == 2
    assert [a.labels["n"] for a in notifier._queue] == ["2", "3", "4"]
    notifier.stop()


def test_a_batch_no_alertmanager_takes_is_dropped_and_each_failure_counted() -> None:
    down = "http://127.0.0.1:1"
    notifier = Notifier([Alertmanager(down, 0.5), Alertmanager(down + "/prefix", 0.5)])
    assert notifier.send_now([alert(1), alert(2)]) is False
    assert notifier.counts.errors == {down: 1, down + "/prefix": 1}
    assert notifier.counts.sent == {down: 2, down + "/prefix": 2}  # posted, as Prometheus counts
    notifier.start()
    notifier.send([alert(3)])
    deadline = time.monotonic() + 10
    while notifier.counts.dropped < 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the sending thread's work
    assert notifier.counts.dropped == 1 and notifier.queue_length() == 0
    notifier.stop()
