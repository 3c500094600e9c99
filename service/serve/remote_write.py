"""Group commit for remote_write: requests that arrive while one is being stored share the
next transaction.

Prometheus sends many small requests at once (one per shard, ~2,000 samples each); one DuckDB
transaction per request costs 60-90 ms whatever its size, one for 100,000 samples ~0.25 s. So
each request is decoded and checked on its own worker thread (a bad one is refused alone), then
queued; one writer thread takes everything queued (up to `MAX_GROUP_SAMPLES`), stores it in one
transaction through the write gate, and answers every request of the group. Should the group's
transaction fail, each request is stored again on its own, so one that cannot be stored fails
alone. A request is answered only after its transaction committed.

A steady stream is grouped on purpose (like Kafka's linger or PostgreSQL's commit_delay): a
Prometheus with a target per node spreads a scrape's requests over the interval, so they arrive
one at a time, and stored as they come each pays the whole cost of a transaction (measured at
10,000 GPUs: ~140 ms for 2,000 samples, ~190 ms for 40,000; most of it deriving the GPU events).
So when the last transaction ended less than `STEADY_S` ago, the writer waits, before it takes
the queue, `LINGER_FACTOR` times as long as that transaction took (at most `MAX_LINGER_S`) or
until `ENOUGH_SAMPLES` are queued. The writer then spends about a quarter of its time in
transactions at most, and a request waits at most three more transactions' time; a lone request
(no transaction just before) is stored at once. What a group cannot exceed is
`MAX_GROUP_SAMPLES`.

The linger also ends once every sender (HTTP connection) of the last group has a request queued
again. A connection carries one request at a time, and a sender waits for its answer before it
sends again (each of Prometheus's shards does), so nothing more can come from them: lingering
then only delays. This is what a sender that has fallen behind looks like, and there the linger
halved its throughput (measured at 10,000 GPUs over 8 connections: 0.26 s transactions of 7.8
requests, each after a 0.25 s linger; the feed fell behind and never caught up).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

from warehouse.remote_write.decode import merge
from warehouse.remote_write.rows import Decoded

MAX_GROUP_SAMPLES = 500_000
#: The linger of a steady stream: what ends it (see the module's text).
STEADY_S, LINGER_FACTOR, MAX_LINGER_S, ENOUGH_SAMPLES = 1.0, 3.0, 0.25, 50_000


class GroupCommit:
    """Queues decoded requests and stores them in groups on one thread of its own."""

    def __init__(
        self, store: Callable[[Decoded], Any], committed: Callable[[int], None] = lambda n: None
    ) -> None:
        self._store = store
        self._committed = committed  # told the requests of each transaction that committed
        self._queue: list[tuple[Decoded, Future[Any], Hashable | None]] = []
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._last_took_s = 0.0  # how long the last transaction took
        self._last_end = float("-inf")  # when it ended (time.monotonic)
        self._last_senders: frozenset[Hashable] = frozenset()  # of the last group, if all known

    def submit(self, rows: Decoded, sender: Hashable | None = None) -> Future[Any]:
        """Queue `rows`; the future holds what its transaction stored, or its error. `sender`:
        the connection it came on (None: unknown), which sends nothing more until answered."""
        done: Future[Any] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            self._queue.append((rows, done, sender))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="wanka-remote-write", daemon=True
                )
                self._thread.start()
            self._ready.notify()
        return done

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify()

    def _take(self) -> list[tuple[Decoded, Future[Any], Hashable | None]]:
        with self._ready:
            while not self._queue and not self._closed:
                self._ready.wait()
            if time.monotonic() - self._last_end < STEADY_S:  # a stream: let the group fill
                until = time.monotonic() + min(MAX_LINGER_S, LINGER_FACTOR * self._last_took_s)
                while (
                    not self._closed
                    and self._queued() < ENOUGH_SAMPLES
                    and not self._senders_back()
                ):
                    left = until - time.monotonic()
                    if left <= 0:
                        break
                    self._ready.wait(left)
            group: list[tuple[Decoded, Future[Any], Hashable | None]] = []
            total = 0
            while self._queue and (
                not group or total + self._queue[0][0].received <= MAX_GROUP_SAMPLES
            ):
                item = self._queue.pop(0)
                total += item[0].received
                group.append(item)
            senders = [sender for _, _, sender in group]
            self._last_senders = frozenset() if None in senders else frozenset(senders)
            return group

    def _queued(self) -> int:
        return sum(rows.received for rows, _, _ in self._queue)

    def _senders_back(self) -> bool:
        """Whether every sender of the last group (each known) has a request queued again."""
        queued = {sender for _, _, sender in self._queue}
        return bool(self._last_senders) and self._last_senders <= queued

    def _run(self) -> None:
        while True:
            group = self._take()
            if not group:
                return  # closed and drained
            started = time.monotonic()
            try:
                stored = self._store(merge([rows for rows, _, _ in group]))
            except Exception as error:
                self._last_end = float("-inf")  # no linger before the ones stored alone
                if len(group) == 1:
                    group[0][1].set_exception(error)
                    continue
                for rows, done, _ in group:  # one at a time: a bad one fails alone
                    try:
                        done.set_result(self._store(rows))
                    except Exception as alone:
                        done.set_exception(alone)
                    else:
                        self._committed(1)
                continue
            self._last_end = time.monotonic()
            self._last_took_s = self._last_end - started
            self._committed(len(group))
            for _, done, _ in group:
                done.set_result(stored)
