"""Rule groups evaluated on the serve process's own thread, their alerts to Alertmanager.

`Rules` is a part of the server (start / stop / apply): `apply` hands the groups read with the
settings to `warehouse.rules.manager.RuleManager` (a group that did not change keeps its alerts)
and the Alertmanagers to a `warehouse.notifier.queue.Notifier`. Its thread wakes every second,
evaluates the groups that are due on a cursor of its own, holding the write gate only while it
stores what the rules recorded, and queues the alerts due; the queue never blocks it.
`/api/v1/rules`, `/api/v1/alerts` and `wanka.rules` / `wanka.alerts` read `snapshot`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Any

from service.serve.core import Core
from service.serve.metric_families import (
    ALERTMANAGERS_DISCOVERED,
    NOTIFICATIONS_DROPPED,
    NOTIFICATIONS_ERRORS,
    NOTIFICATIONS_LATENCY,
    NOTIFICATIONS_QUEUE_CAPACITY,
    NOTIFICATIONS_QUEUE_LENGTH,
    NOTIFICATIONS_SENT,
    RULE_EVALUATION_FAILURES,
    RULE_EVALUATIONS,
    RULE_GROUP_INTERVAL,
    RULE_GROUP_ITERATIONS_MISSED,
    RULE_GROUP_LAST_DURATION,
)
from service.serve.metrics import Gauges
from service.serve.settings import RuleSettings, ServeSettings
from service.serve.writes import WriterBusy
from warehouse.notifier.queue import Alertmanager, Notifier
from warehouse.rules import api, tables
from warehouse.rules.health_series import METRIC, HealthSeries
from warehouse.rules.manager import RuleConfig, RuleManager
from warehouse.rules.store import QUERY_WORKERS, Store

log = logging.getLogger("wanka.rules")
TICK_S = 1.0
WRITE_WAIT_S = 10.0  # for the write gate, before an evaluation's write is given up (counted)


class Rules:
    def __init__(self, core: Core) -> None:
        self._core = core
        self.manager = RuleManager()
        self.lock = threading.Lock()  # the manager's state: evaluation vs. the API's reads
        self.settings = RuleSettings()
        self.external_labels: dict[str, str] = {}
        self.notifier: Notifier | None = None
        self.health = HealthSeries()  # wanka_gpu_health, for the groups that read it
        self._counted: dict[tuple[str, str], int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        #: /api/v1/rules' and /api/v1/alerts' data, made after each evaluation (the routes
        #: read it without waiting for one under way)
        self.snapshot: tuple[dict[str, Any], dict[str, Any]] = ({"groups": []}, {"alerts": []})

    def publish(self) -> None:
        with self.lock:
            runners = list(self.manager.runners.values())
            self.snapshot = (api.rules_data(runners), api.alerts_data(runners))

    def apply(self, settings: ServeSettings) -> None:
        rules = settings.rules
        if not rules.external_url:
            rules = replace(rules, external_url=f"http://{settings.host}:{settings.port}")
        labels = dict(settings.external_labels)
        config = RuleConfig(
            files=rules.files,
            interval_ms=round(rules.evaluation_interval_s * 1000),
            offset_ms=round(rules.query_offset_s * 1000),
            query_timeout_s=settings.limits.timeout_s,
            external_labels=tuple(sorted(labels.items())),
            external_url=rules.external_url,
        )
        with self.lock:
            self.manager.apply(config, list(rules.groups))
            runners = list(self.manager.runners.values())
        self._core.with_cursor(lambda cur: self._save_all(cur, runners))
        self.publish()
        notifier_changed = (
            rules.alertmanagers != self.settings.alertmanagers
            or labels != self.external_labels
            or rules.external_url != self.settings.external_url
        )
        self.settings, self.external_labels = rules, labels
        if notifier_changed or self.notifier is None:
            old = self.notifier
            self.notifier = Notifier(
                [Alertmanager(u, rules.alertmanager_timeout_s) for u in rules.alertmanagers],
                labels,
                rules.external_url,
                on_error=lambda url, why: log.warning(
                    "alerts not sent", extra={"alertmanager": url, "error": why}
                ),
            )
            if old is not None:
                old.stop()
            if self._started:
                self.notifier.start()

    def _save_all(self, cur: Any, runners: list[Any]) -> None:
        with self._core.writes.hold(cur, 30, "rules"):
            tables.keep_only(cur, runners)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        if self.notifier is not None:
            self.notifier.start()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wanka-rules", daemon=True)
        self._thread.start()

    def stop_loop(self) -> None:
        """Stop evaluating on the thread (the notifier goes on): the tests then evaluate at
        the times they choose (`evaluate_due`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def stop(self) -> None:
        self._started = False
        self.stop_loop()
        if self.notifier is not None:
            self.notifier.stop()
            self.notifier = None

    def _run(self) -> None:
        cur = self._core.engine.cursor()
        try:
            while not self._stop.wait(TICK_S):
                self.evaluate_due(cur, int(time.time() * 1000))
        finally:
            cur.close()

    def evaluate_due(self, cur: Any, now_ms: int) -> int:
        """Evaluate the groups due at `now_ms` and queue their alerts; how many ran."""
        metrics = self._core.metrics
        with self.lock:
            due = self.manager.due(now_ms)
        # the write gate only around each write: queries (seconds for a large group) never
        # hold up remote_write or ingest. Rules write their samples (and staleness markers) at
        # their evaluation times, which the gate is told (the PromQL result cache keeps steps
        # older than a few minutes).
        oldest = min((ts for _, ts in due), default=None)
        store = Store(
            cur, self._core.limits.timeout_s, workers=QUERY_WORKERS,
            guard=lambda: self._core.writes.hold(cur, WRITE_WAIT_S, "rules", oldest),
        )  # fmt: skip
        if any(reads is not None and METRIC in reads for r, _ in due for reads in r.reads):
            self.health.write(store, max(ts for _, ts in due))
        for runner, ts_ms in due:
            group = f"{runner.group.file};{runner.group.name}"
            try:
                with self.lock:
                    alerts = self.manager.evaluate(runner, store, ts_ms)
                with self._core.writes.hold(cur, WRITE_WAIT_S, "rules", ts_ms):
                    tables.save_group(cur, runner)
            except WriterBusy:
                metrics.count(RULE_GROUP_ITERATIONS_MISSED, rule_group=group)
                continue
            except Exception:  # the thread must outlive any one failure
                log.exception("rule group evaluation failed", extra={"rule_group": group})
                continue
            metrics.count(RULE_EVALUATIONS, len(runner.group.rules), rule_group=group)
            failed = sum(1 for s in runner.status if s.health == "err")
            if failed:
                metrics.count(RULE_EVALUATION_FAILURES, failed, rule_group=group)
            if alerts and self.notifier is not None:
                self.notifier.send(alerts)
        if due:
            self.publish()
        return len(due)

    def gauges(self) -> Gauges:
        """The groups' last durations and intervals, the queue's length and capacity; the
        notifier's counts are added to their counters here, as they grew since the last read."""
        found: Gauges = {}
        with self.lock:
            runners = list(self.manager.runners.values())
        durations: dict[tuple[tuple[str, str], ...], float] = {}
        intervals: dict[tuple[tuple[str, str], ...], float] = {}
        for runner in runners:
            key = (("rule_group", f"{runner.group.file};{runner.group.name}"),)
            durations[key] = runner.evaluation_s
            intervals[key] = runner.interval_ms / 1000
        if runners:
            found[RULE_GROUP_LAST_DURATION] = durations
            found[RULE_GROUP_INTERVAL] = intervals
        notifier = self.notifier
        if notifier is not None:
            found[NOTIFICATIONS_QUEUE_LENGTH] = {(): float(notifier.queue_length())}
            found[NOTIFICATIONS_QUEUE_CAPACITY] = {(): float(notifier.capacity)}
            found[ALERTMANAGERS_DISCOVERED] = {(): float(len(notifier.alertmanagers))}
            if notifier.counts.latency_s:
                found[NOTIFICATIONS_LATENCY] = {
                    (("alertmanager", url),): s for url, s in notifier.counts.latency_s.items()
                }
            self._count_growth(notifier)
        return found

    def _count_growth(self, notifier: Notifier) -> None:
        metrics = self._core.metrics
        counts = notifier.counts
        now = {("dropped", ""): counts.dropped}
        now.update({("sent", url): n for url, n in counts.sent.items()})
        now.update({("errors", url): n for url, n in counts.errors.items()})
        families = {"dropped": NOTIFICATIONS_DROPPED, "sent": NOTIFICATIONS_SENT,
                    "errors": NOTIFICATIONS_ERRORS}  # fmt: skip
        for (kind, url), total in now.items():
            grown = total - self._counted.get((kind, url), 0)
            if grown > 0:
                labels = {"alertmanager": url} if url else {}
                metrics.count(families[kind], grown, **labels)
                self._counted[(kind, url)] = total
