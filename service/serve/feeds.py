"""The live feeds of `wanka serve`: scraping file_sd targets and polling Slurm, each on a thread
of its own, storing through the server's write gate. A failure is logged, counted on /metrics
and retried; it never stops the server.

- `ScrapeLoop`: every interval, rereads the file_sd file when it changed (a bad edit is logged
  and the targets before it kept), scrapes every target at once (warehouse/scrape), and stores
  the round as one batch with wanka.scrape_targets.
- `SacctLoop`: every interval, `sacct` for the window since its last good poll (and `scontrol`
  where given); after a failure it tries again after 5 s, 10 s, 20 s, ... up to the interval.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.serve.metric_families import (
    SACCT_FAILURES,
    SACCT_POLLS,
    SACCT_ROWS,
    SCRAPE_CONFIG_ERRORS,
    SCRAPE_ROUND_ERRORS,
    SCRAPE_ROUNDS,
    SCRAPE_SAMPLES,
    SCRAPE_TARGET_DURATION,
    SCRAPE_TARGET_SAMPLES,
    SCRAPE_TARGET_UP,
)
from service.serve.metrics import Gauges, Labels

if TYPE_CHECKING:
    from service.serve.server import Server

log = logging.getLogger("wanka.feeds")


class ScrapeLoop:
    def __init__(
        self, server: Server, path: Path, *, interval_s: float, timeout_s: float, job: str
    ) -> None:
        from warehouse.ingest.batch import read_context
        from warehouse.ingest.models import ModelNames
        from warehouse.scrape.scraper import Scraper
        from warehouse.scrape.targets import load

        self.server, self.path, self.interval_s, self.job = server, path, interval_s, job
        self.targets = load(path, job)  # a bad file at start-up stops `wanka serve` early
        self._mtime = self._stat()
        names = ModelNames(read_context(server.engine).model_names)
        self.scraper = Scraper(names, timeout_s=min(timeout_s, interval_s))
        self.health: list[Any] = []
        self._thread = threading.Thread(target=self._run, name="wanka-scrape", daemon=True)

    def start(self) -> ScrapeLoop:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join(timeout=30)

    def _stat(self) -> float | None:
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def _reload(self) -> None:
        from warehouse.errors import UserError
        from warehouse.scrape.targets import load

        mtime = self._stat()
        if mtime == self._mtime:
            return
        self._mtime = mtime
        try:
            self.targets = load(self.path, self.job)
        except UserError as error:
            log.error(
                "scrape config not reloaded, keeping %d targets: %s", len(self.targets), error
            )
            self.server.metrics.count(SCRAPE_CONFIG_ERRORS)
            return
        log.info("scrape config reread: %d targets", len(self.targets))

    def _run(self) -> None:
        from warehouse.scrape.store import store_round

        stop = self.server.stopping
        next_at = time.monotonic()
        while not stop.is_set():
            self._reload()
            try:
                done = self.scraper.round(self.targets)
                with self.server.writes.hold(done, self.server.limits.timeout_s):
                    stored = self.server.with_cursor(partial(store_round, done=done))
            except Exception as error:  # the loop must outlive any one failure
                log.exception("scrape round failed")
                self.server.metrics.count(SCRAPE_ROUND_ERRORS, error=type(error).__name__)
            else:
                self.health = done.health
                self.server.metrics.count(SCRAPE_ROUNDS)
                for table, count in (("gpu_metrics", stored.gpu), ("prom_samples", stored.other)):
                    self.server.metrics.count(SCRAPE_SAMPLES, count, table=table)
            next_at += self.interval_s
            stop.wait(max(next_at - time.monotonic(), 0.0))
            next_at = max(next_at, time.monotonic())  # a slow round does not queue up rounds

    def gauges(self) -> Gauges:
        """Each target's last scrape, as /metrics shows it."""
        up: dict[Labels, float] = {}
        duration: dict[Labels, float] = {}
        samples: dict[Labels, float] = {}
        for h in self.health:
            key = (("target", h.target),)
            up[key], duration[key], samples[key] = float(h.up), h.duration_s, float(h.samples)
        return {
            SCRAPE_TARGET_UP: up,
            SCRAPE_TARGET_DURATION: duration,
            SCRAPE_TARGET_SAMPLES: samples,
        }


class SacctLoop:
    FIRST_RETRY_S = 5.0

    def __init__(self, server: Server, poll: Any, *, interval_s: float) -> None:
        self.server, self.poll, self.interval_s = server, poll, interval_s
        self.failures = 0
        self._thread = threading.Thread(target=self._run, name="wanka-sacct", daemon=True)

    def start(self) -> SacctLoop:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join(timeout=30)

    def _run(self) -> None:
        server = self.server
        while not server.stopping.is_set():
            try:
                polled = self.poll.poll(
                    server.engine, hold=lambda: server.writes.hold(self, server.limits.timeout_s)
                )
            except Exception as error:  # the loop must outlive any one failure
                self.failures += 1
                wait = min(self.FIRST_RETRY_S * 2 ** (self.failures - 1), self.interval_s)
                log.error("Slurm poll failed (%d in a row), next try in %g s: %s",
                          self.failures, wait, error)  # fmt: skip
                server.metrics.count(SACCT_POLLS, outcome="failed")
            else:
                self.failures, wait = 0, self.interval_s
                server.metrics.count(SACCT_POLLS, outcome="ok")
                for source, rows in (
                    ("sacct", polled.sacct_rows),
                    ("scontrol", polled.scontrol_rows),
                ):
                    server.metrics.count(SACCT_ROWS, rows, source=source)
            server.stopping.wait(wait)

    def gauges(self) -> Gauges:
        return {SACCT_FAILURES: {(): float(self.failures)}}
