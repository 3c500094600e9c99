"""The queue between rule evaluation and Alertmanager, and the thread that empties it.

`Notifier.send` never blocks: it appends to a bounded queue (Prometheus's default capacity,
10,000) and drops the oldest alerts when it is full. A thread takes up to 64 alerts at a time
(Prometheus's batch) and posts them to every Alertmanager at once; an Alertmanager that is down
or slow costs only its own timeout. A batch no Alertmanager took is dropped, and counted.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

from warehouse.notifier.payload import Outgoing, to_json

QUEUE_CAPACITY = 10_000
MAX_BATCH = 64


@dataclass(frozen=True)
class Alertmanager:
    """One Alertmanager: its base URL (`http://host:9093`, a path prefix included)."""

    url: str
    timeout_s: float = 10.0

    @property
    def alerts_url(self) -> str:
        return self.url.rstrip("/") + "/api/v2/alerts"


@dataclass
class Counts:
    """What /metrics shows, under Prometheus's names (prometheus_notifications_*)."""

    dropped: int = 0
    sent: dict[str, int] = field(default_factory=dict)  # alerts posted, by Alertmanager URL
    errors: dict[str, int] = field(default_factory=dict)  # posts that failed
    latency_s: dict[str, float] = field(default_factory=dict)  # the last post's


class Notifier:
    """Sends queued alerts to every Alertmanager in `alertmanagers`."""

    def __init__(
        self,
        alertmanagers: list[Alertmanager],
        external_labels: dict[str, str] | None = None,
        external_url: str = "",
        capacity: int = QUEUE_CAPACITY,
        on_error: Callable[[str, str], None] | None = None,
    ) -> None:
        self.alertmanagers = list(alertmanagers)
        self.external_labels = dict(external_labels or {})
        self.external_url = external_url
        self.capacity = capacity
        self.counts = Counts()
        self.on_error = on_error
        self._queue: collections.deque[Outgoing] = collections.deque()
        self._lock = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._client = httpx.Client()
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.alertmanagers)))

    def queue_length(self) -> int:
        return len(self._queue)

    def send(self, alerts: list[Outgoing]) -> None:
        """Queue `alerts` (never blocks); the oldest are dropped past the capacity."""
        if not alerts or not self.alertmanagers:
            return
        with self._lock:
            self._queue.extend(alerts)
            over = len(self._queue) - self.capacity
            if over > 0:
                for _ in range(over):
                    self._queue.popleft()
                self.counts.dropped += over
            self._lock.notify()

    def start(self) -> None:
        if self._thread is None and self.alertmanagers:
            self._stop = False
            self._thread = threading.Thread(target=self._run, name="wanka-notifier", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stop = True
            self._lock.notify()
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stop:
                    self._lock.wait()
                if self._stop:
                    return
                batch = [self._queue.popleft() for _ in range(min(MAX_BATCH, len(self._queue)))]
            if not self.send_now(batch):
                self.counts.dropped += len(batch)

    def send_now(self, batch: list[Outgoing]) -> bool:
        """Post `batch` to every Alertmanager at once; whether one of them took it."""
        body = json.dumps(
            [to_json(a, self.external_labels, self.external_url) for a in batch]
        ).encode()
        results = list(
            self._pool.map(lambda am: self._post(am, body, len(batch)), self.alertmanagers)
        )
        return any(results)

    def _post(self, am: Alertmanager, body: bytes, count: int) -> bool:
        started = time.perf_counter()
        try:
            response = self._client.post(
                am.alerts_url, content=body, timeout=am.timeout_s,
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
            ok = response.status_code // 100 == 2
            why = f"HTTP {response.status_code}: {response.text[:200]}"
        except httpx.HTTPError as error:
            ok, why = False, f"{type(error).__name__}: {error}"
        # as Prometheus counts: every alert posted is "sent", every failed post an error
        self.counts.latency_s[am.url] = time.perf_counter() - started
        self.counts.sent[am.url] = self.counts.sent.get(am.url, 0) + count
        if ok:
            return True
        self.counts.errors[am.url] = self.counts.errors.get(am.url, 0) + 1
        if self.on_error is not None:
            self.on_error(am.url, why)
        return False
