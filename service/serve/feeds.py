"""The live feeds of `wanka serve`: scraping file_sd targets and polling Slurm, each on a thread
of its own, storing through the server's write gate. A failure is logged, counted on /metrics
and retried; it never stops the server. `Feeds` runs the loops its `FeedSettings` ask for.

- `ScrapeLoop`, one per scrape config (`ScrapeJob`): every interval, rereads its file_sd files
  when one changed (a bad edit is logged and the targets before it kept), scrapes every target
  at once (warehouse/scrape), and stores the round as one batch with wanka.scrape_targets.
- `SacctLoop`: every interval, `sacct` for the window since its last good poll (and `scontrol`
  where given); after a failure it tries again after 5 s, 10 s, 20 s, ... up to the interval.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from service.serve.core import Core
from service.serve.metric_families import (
    SACCT_FAILURES,
    SACCT_LAST_SUCCESS,
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
from service.serve.settings import FeedSettings, ScrapeJob, ServeSettings
from warehouse.remote_write.rows import oldest_ms

if TYPE_CHECKING:
    from warehouse.scrape.scraper import Health
    from warehouse.scrape.slurm import SlurmPoll
    from warehouse.scrape.targets import Target

log = logging.getLogger("wanka.feeds")


class Loop(Protocol):
    def start(self) -> Loop: ...
    def join(self) -> None: ...
    def gauges(self) -> Gauges: ...
    def describe(self) -> str: ...


class Feeds:
    """The loops `FeedSettings` asks for; `apply` restarts them when those settings change."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self.settings = FeedSettings()
        self.loops: list[Loop] = []
        self._started = False  # between start() and stop(), even with no loops to run
        self._stop = threading.Event()

    def apply(self, settings: ServeSettings) -> None:
        """Run what `settings.feeds` asks for: running loops stop and the new ones start when
        it changed (a bad scrape config raises UserError, the feeds left stopped)."""
        if settings.feeds == self.settings:
            return
        started = self._started
        self.stop()
        self.settings = settings.feeds
        if started:
            self.start()

    def start(self) -> None:
        """Start the loops asked for; a bad scrape config raises here (UserError), before any."""
        if self._started:
            return
        self._stop = threading.Event()
        self.loops = [loop.start() for loop in self._loops(self.settings)]
        self._started = True

    def _loops(self, settings: FeedSettings) -> list[Loop]:
        from warehouse.scrape.slurm import SlurmPoll

        loops: list[Loop] = [ScrapeLoop(self._core, self._stop, j) for j in settings.scrape_jobs]
        if settings.sacct_interval_s:
            scontrol = settings.scontrol_command or shutil.which("scontrol")
            poll = SlurmPoll(settings.sacct_command, scontrol)
            loops.append(
                SacctLoop(self._core, self._stop, poll, interval_s=settings.sacct_interval_s)
            )
        return loops

    def stop(self) -> None:
        """Stop every loop after its round under way (waiting up to 30 s for each)."""
        self._started = False
        self._stop.set()
        for loop in self.loops:
            loop.join()
        self.loops = []

    def gauges(self) -> Gauges:
        """The loops' gauges for /metrics: scrape targets' health, Slurm poll failures."""
        gauges: Gauges = {}
        for loop in self.loops:
            gauges.update(loop.gauges())
        return gauges

    def describe(self) -> list[str]:
        """One line per running loop, for `wanka serve` to print at start."""
        return [loop.describe() for loop in self.loops]


class ScrapeLoop:
    """One scrape config's targets, scraped every interval (see the module's docstring)."""

    def __init__(self, core: Core, stop: threading.Event, job: ScrapeJob) -> None:
        from warehouse.ingest.batch import read_context
        from warehouse.ingest.models import ModelNames
        from warehouse.scrape.scraper import Scraper

        self.core, self.stop, self.job = core, stop, job
        self.interval_s = job.interval_s
        self._mtimes = self._stat()
        self.targets = job_targets(job)  # a bad file at start-up stops `wanka serve` early
        names = ModelNames(read_context(core.engine).model_names)
        self.scraper = Scraper(names, timeout_s=min(job.timeout_s, job.interval_s))
        self.health: list[Health] = []
        self._thread = threading.Thread(
            target=self._run, name=f"wanka-scrape-{job.name}", daemon=True
        )

    def start(self) -> ScrapeLoop:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join(timeout=30)

    def describe(self) -> str:
        files = f" ({', '.join(self.job.files)})" if self.job.files else ""
        return (
            f"scraping:         job {self.job.name}: {len(self.targets)} targets{files} "
            f"every {self.interval_s:g} s"
        )

    def _stat(self) -> dict[str, float]:
        found = {}
        for path in sd_files(self.job):
            with contextlib.suppress(OSError):
                found[str(path)] = path.stat().st_mtime
        return found

    def _reload(self) -> None:
        from warehouse.errors import UserError

        mtimes = self._stat()
        if mtimes == self._mtimes:
            return
        self._mtimes = mtimes
        try:
            self.targets = job_targets(self.job)
        except UserError as error:
            log.error(
                "scrape config not reloaded, keeping %d targets: %s", len(self.targets), error
            )
            self.core.metrics.count(SCRAPE_CONFIG_ERRORS)
            return
        log.info("scrape config reread: job %s has %d targets", self.job.name, len(self.targets))

    def _run(self) -> None:
        from warehouse.scrape.store import store_round

        core, stop, metrics = self.core, self.stop, self.core.metrics
        next_at = time.monotonic()
        while not stop.is_set():
            self._reload()
            try:
                done = self.scraper.round(self.targets)
                oldest = oldest_ms(done.rows)
                with core.writes.hold(done, core.limits.timeout_s, "scrape", oldest):
                    stored = core.with_cursor(partial(store_round, done=done))
            except Exception as error:  # the loop must outlive any one failure
                log.exception("scrape round failed")
                metrics.count(SCRAPE_ROUND_ERRORS, error=type(error).__name__)
            else:
                self.health = done.health
                metrics.count(SCRAPE_ROUNDS)
                for table, count in (("gpu_metrics", stored.gpu), ("prom_samples", stored.other)):
                    metrics.count(SCRAPE_SAMPLES, count, table=table)
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


def sd_files(job: ScrapeJob) -> list[Path]:
    """The file_sd files of `job` now: each path, a `*` or `?` in its file name matched as a
    glob, as Prometheus matches `files` (a pattern matching nothing yields no file)."""
    found: list[Path] = []
    for given in job.files:
        path = Path(given)
        if any(c in path.name for c in "*?["):
            found += sorted(path.parent.glob(path.name))
        else:
            found.append(path)
    return found


def job_targets(job: ScrapeJob) -> list[Target]:
    """Every target of `job`: its static groups, then its file_sd files' (UserError naming the
    file and entry when one is bad)."""
    from warehouse.scrape.targets import load, target

    defaults = {"__scheme__": job.scheme, "__metrics_path__": job.metrics_path}
    defaults |= {f"__param_{name}": value for name, value in job.params}
    found: dict[Target, None] = {}
    for addresses, labels in job.static:
        for address in addresses:
            found[target(address, {**defaults, **dict(labels)}, job.name, job.headers)] = None
    for path in sd_files(job):
        found.update(dict.fromkeys(load(path, job.name, defaults, job.headers)))
    return list(found)


class SacctLoop:
    FIRST_RETRY_S = 5.0

    def __init__(
        self, core: Core, stop: threading.Event, poll: SlurmPoll, *, interval_s: float
    ) -> None:
        self.core, self.stop, self.poll, self.interval_s = core, stop, poll, interval_s
        self.failures = 0
        self.last_success: float | None = None  # when a poll last worked (epoch seconds)
        self._thread = threading.Thread(target=self._run, name="wanka-sacct", daemon=True)

    def start(self) -> SacctLoop:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join(timeout=30)

    def describe(self) -> str:
        also = f" and {self.poll.scontrol}" if self.poll.scontrol else ""
        return f"Slurm polling:    {self.poll.sacct}{also} every {self.interval_s:g} s"

    def _run(self) -> None:
        core, metrics = self.core, self.core.metrics
        while not self.stop.is_set():
            try:
                polled = self.poll.poll(
                    core.engine, hold=lambda: core.writes.hold(self, core.limits.timeout_s, "slurm")
                )
            except Exception as error:  # the loop must outlive any one failure
                self.failures += 1
                wait = min(self.FIRST_RETRY_S * 2 ** (self.failures - 1), self.interval_s)
                log.error("Slurm poll failed (%d in a row), next try in %g s: %s",
                          self.failures, wait, error)  # fmt: skip
                metrics.count(SACCT_POLLS, outcome="failed")
            else:
                self.failures, wait = 0, self.interval_s
                self.last_success = time.time()
                metrics.count(SACCT_POLLS, outcome="ok")
                for source, rows in (
                    ("sacct", polled.sacct_rows),
                    ("scontrol", polled.scontrol_rows),
                ):
                    metrics.count(SACCT_ROWS, rows, source=source)
            self.stop.wait(wait)

    def gauges(self) -> Gauges:
        found: Gauges = {SACCT_FAILURES: {(): float(self.failures)}}
        if self.last_success is not None:
            found[SACCT_LAST_SUCCESS] = {(): self.last_success}
        return found
