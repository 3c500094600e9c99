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

if TYPE_CHECKING:
    from service.serve.server import Server

log = logging.getLogger("wanka.feeds")
Gauges = dict[str, tuple[str, dict[tuple[tuple[str, str], ...], float]]]


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
            self._count("wanka_scrape_config_errors_total", "Scrape config rereads refused.")
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
                self._count(
                    "wanka_scrape_round_errors_total",
                    "Scrape rounds not stored.",
                    error=type(error).__name__,
                )
            else:
                self.health = done.health
                self._count("wanka_scrape_rounds_total", "Scrape rounds stored.")
                for table, count in (("gpu_metrics", stored.gpu), ("prom_samples", stored.other)):
                    self._count(
                        "wanka_scrape_samples_total", "Scraped samples stored.", count, table=table
                    )
            next_at += self.interval_s
            stop.wait(max(next_at - time.monotonic(), 0.0))
            next_at = max(next_at, time.monotonic())  # a slow round does not queue up rounds

    def _count(self, name: str, help_text: str, value: float = 1, **labels: str) -> None:
        self.server.metrics.count(name, help_text, value, **labels)

    def gauges(self) -> Gauges:
        """Each target's last scrape, as /metrics shows it."""
        up: dict[tuple[tuple[str, str], ...], float] = {}
        duration: dict[tuple[tuple[str, str], ...], float] = {}
        samples: dict[tuple[tuple[str, str], ...], float] = {}
        for h in self.health:
            key = (("target", h.target),)
            up[key], duration[key], samples[key] = float(h.up), h.duration_s, float(h.samples)
        return {
            "wanka_scrape_target_up": ("1 when the target's last scrape worked, else 0.", up),
            "wanka_scrape_target_duration_seconds": ("The target's last scrape.", duration),
            "wanka_scrape_target_samples": ("Samples of the target's last scrape.", samples),
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
                server.metrics.count(
                    "wanka_sacct_polls_total", "Slurm polls, by outcome.", outcome="failed"
                )
            else:
                self.failures, wait = 0, self.interval_s
                server.metrics.count(
                    "wanka_sacct_polls_total", "Slurm polls, by outcome.", outcome="ok"
                )
                for source, rows in (
                    ("sacct", polled.sacct_rows),
                    ("scontrol", polled.scontrol_rows),
                ):
                    server.metrics.count(
                        "wanka_sacct_rows_total",
                        "Rows ingested by Slurm polls.",
                        rows,
                        source=source,
                    )
            server.stopping.wait(wait)

    def gauges(self) -> Gauges:
        return {
            "wanka_sacct_consecutive_failures": (
                "Slurm polls failed since the last that worked.",
                {(): float(self.failures)},
            )
        }
