"""The serve process's scheduler: upkeep and refreshes as a list of named jobs, on one thread
with a cursor of its own.

Each pass (every shortest job interval) runs the jobs that are due, in list order: `wanka serve`
runs retention, then the folding of the downsampling tiers, then compaction, then the refresh of
the due dynamic tables (`upkeep_jobs`), every --refresh-interval-s. A job takes the write gate
(`writes.py`) around each of its transactions (a window and metric of compaction, one dynamic
table's refresh), not for the whole pass, so remote_write's commits go in between: at 10,000
GPUs a pass can take minutes, and a feed held back that long lags by as much. A pass that cannot
get the gate within its interval stops there and is counted (`wanka_scheduler_waits_total`); a
job that raises ends its pass, which is counted (`wanka_scheduler_errors_total`) and tried again
at the next: the thread outlives any failure. Each job counts its runs and failures and shows
how long its last run took, by `job`. Each run is logged with its time: at debug level, or at
info once it took `SLOW_S` or more (as Prometheus logs its compactions), so what a long-running
server spent a slow minute on can be read from its log.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from service.serve.core import Core, Cursor
from service.serve.metric_families import (
    JOB_FAILURES,
    JOB_LAST_DURATION,
    JOB_RUNS,
    REFRESHES,
    RETENTION_ROWS_DROPPED,
    SCHEDULER_ERRORS,
    SCHEDULER_WAITS,
)
from service.serve.metrics import Gauges, Metrics
from service.serve.settings import ServeSettings
from service.serve.writes import WriterBusy
from warehouse.errors import UserError
from warehouse.kernel.transactions import Turn

log = logging.getLogger("wanka.scheduler")
#: A job run at least this long is logged at info level (shorter ones at debug).
SLOW_S = 5.0
#: How many of a job's last runs the refresh job's estimate of the next pass's upkeep takes
#: the longest of.
RECENT = 6


@dataclass(frozen=True)
class ScheduledJob:
    """Work the scheduler runs every `interval_s` on its cursor, taking the write gate by the
    `Turn` it is given around each of its transactions."""

    name: str
    interval_s: float
    run: Callable[[Cursor, Turn], None]


def upkeep_jobs(
    interval_s: float, metrics: Metrics, took: dict[str, float] | None = None
) -> list[ScheduledJob]:
    """What `wanka serve` runs every `interval_s`, in this order: the telemetry store's upkeep
    (`warehouse.tsdb.upkeep.TASKS`: retention drops what its rules say is too old, the tiers
    fold the new samples, compaction moves closed windows into compressed blocks, a few seconds
    of it a pass), then the thermal residuals of the whole days the hourly tier holds
    (`warehouse.faults.thermal`), then the due dynamic tables refresh: those that would be late
    before the next one, `interval_s` later and after the next pass's upkeep (as long as the
    longest of its tasks' recent runs took, from `took`: job name -> seconds; compaction's
    pass, for one, takes from milliseconds to its budget of seconds). A GPU event that drains or
    replaces a GPU at once (an XID 79, a double-bit ECC error) refreshes health_findings at the
    next pass whatever its freshness target (`warehouse.health.findings.urgent_after`)."""
    from warehouse.tsdb.upkeep import TASKS, Task

    #: What the rows a task reports count toward on /metrics.
    counted = {"retention": RETENTION_ROWS_DROPPED}

    def upkeep(task: Task) -> Callable[[Cursor, Turn], None]:
        def run(cur: Cursor, turn: Turn) -> None:
            for table, rows in task.run(cur, turn):
                if task.name in counted:
                    metrics.count(counted[task.name], rows, table=table)

        return run

    seen: list[int] = []  # the newest batch of GPU events the refresh job looked at

    def refresh(cur: Cursor, turn: Turn) -> None:
        from warehouse.dynamic.schedule import run_due
        from warehouse.faults import thermal
        from warehouse.health import findings
        from warehouse.kernel.transactions import transaction

        with turn(), transaction(cur):  # the whole days the tiers hold: node_risk's evidence
            thermal.derive(cur)
        urgent = findings.urgent_after(cur, seen[0]) if seen else None
        seen[:] = [urgent or (seen[0] if seen else findings.newest_event_batch(cur))]
        upkeep_s = sum((took or {}).get(task.name, 0.0) for task in TASKS)
        done = run_due(cur, next_pass_s=interval_s + upkeep_s, turn=turn)
        if urgent is not None and not any(o.name == findings.FINDINGS for o in done):
            with contextlib.suppress(UserError):  # a warehouse without health_findings
                done += run_due(cur, name=findings.FINDINGS, turn=turn)
        for outcome in done:
            kind = type(outcome).__name__.lower()
            metrics.count(REFRESHES, table=outcome.name, outcome=kind)

    jobs = [ScheduledJob(task.name, max(interval_s, task.every_s), upkeep(task)) for task in TASKS]
    return [*jobs, ScheduledJob("refresh", interval_s, refresh)]


class Scheduler:
    def __init__(self, core: Core, jobs: list[ScheduledJob] | None = None) -> None:
        self._core = core
        self.jobs = jobs or []
        self._interval_s: float | None = None  # what `apply` built `jobs` for
        self._started = False  # between start() and stop(), even with no jobs to run
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._recent_s: dict[str, deque[float]] = {}  # each job's last RECENT runs, seconds
        #: The longest of each job's last RECENT runs, in seconds, by job: what the refresh
        #: job reckons the next pass's upkeep at.
        self.took: dict[str, float] = {}

    def apply(self, settings: ServeSettings) -> None:
        """Run `upkeep_jobs` every `settings.refresh_interval_s` (None: none); a running
        scheduler whose interval changed restarts with the new jobs."""
        interval_s = settings.refresh_interval_s or None
        if interval_s == self._interval_s:
            return
        started = self._started
        self.stop()
        self._interval_s = interval_s
        self.jobs = upkeep_jobs(interval_s, self._core.metrics, self.took) if interval_s else []
        if started:
            self.start()

    def start(self) -> None:
        """Run the jobs on a thread of its own (none when there are no jobs)."""
        if self._started:
            return
        self._started = True
        if not self.jobs:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run,
            args=(list(self.jobs), self._stop),
            name="wanka-scheduler",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop after the pass under way (waiting for it up to 30 s)."""
        self._started = False
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=30)
            self._thread = None

    def gauges(self) -> Gauges:
        """How long each job's last run took, once one ran."""
        # a copy first: the scheduler's thread may add a job meanwhile
        last_s = {name: recent[-1] for name, recent in self._recent_s.copy().items()}
        if not last_s:
            return {}
        return {JOB_LAST_DURATION: {(("job", name),): s for name, s in last_s.items()}}

    def _run(self, jobs: list[ScheduledJob], stop: threading.Event) -> None:
        tick_s = min(job.interval_s for job in jobs)
        next_at = dict.fromkeys((job.name for job in jobs), 0.0)
        cur = self._core.engine.cursor()
        try:
            while not stop.wait(tick_s):
                started = time.monotonic()
                due = [job for job in jobs if next_at[job.name] <= started]
                if due and self._pass(cur, due, tick_s):
                    next_at.update((job.name, started + job.interval_s) for job in due)
        finally:
            cur.close()

    def _pass(self, cur: Cursor, due: list[ScheduledJob], wait_s: float) -> bool:
        """Run `due`, each transaction of each in a turn at the write gate; whether they all
        ran."""
        metrics = self._core.metrics
        try:
            for job in due:
                self._run_job(job, cur, wait_s)
        except WriterBusy:
            metrics.count(SCHEDULER_WAITS)
            return False
        except Exception as error:  # the loop must outlive any one failure
            metrics.count(SCHEDULER_ERRORS, error=type(error).__name__)
            return False
        return True

    def _run_job(self, job: ScheduledJob, cur: Cursor, wait_s: float) -> None:
        metrics, writes = self._core.metrics, self._core.writes
        metrics.count(JOB_RUNS, job=job.name)
        started = time.perf_counter()
        try:
            job.run(cur, lambda: writes.hold(cur, wait_s, job.name))
        except Exception:
            metrics.count(JOB_FAILURES, job=job.name)
            raise
        finally:
            took_s = time.perf_counter() - started
            recent = self._recent_s.get(job.name) or deque(maxlen=RECENT)
            recent.append(took_s)
            self._recent_s[job.name] = recent  # never empty where `gauges` reads it
            self.took[job.name] = max(recent)
            log.log(
                logging.INFO if took_s >= SLOW_S else logging.DEBUG,
                "%s ran in %.2f s",
                job.name,
                took_s,
                extra={"job": job.name, "seconds": round(took_s, 3)},
            )
