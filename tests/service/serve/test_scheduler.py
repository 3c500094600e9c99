"""The serve scheduler runs a list of named jobs (service/serve/scheduler.py): in order, each
taking the write gate around each of its transactions, each counted on /metrics; a failure ends
its pass, a busy gate skips it, and the thread goes on."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from service.serve.core import Core, Cursor
from service.serve.scheduler import RECENT, ScheduledJob, Scheduler, upkeep_jobs
from service.serve.server import Server
from service.serve.settings import ServeSettings
from warehouse.kernel.transactions import Turn

TICK_S = 0.01


@pytest.fixture
def core() -> Iterator[Core]:
    with Server(":memory:") as server:
        yield server.core


def job(name: str, ran: list[str], then: Callable[[], None] = lambda: None) -> ScheduledJob:
    def run(cur: Cursor, turn: Turn) -> None:
        with turn():
            assert cur.execute("SELECT 1").fetchall() == [(1,)]  # the scheduler's own cursor
            ran.append(name)
        then()

    return ScheduledJob(name, TICK_S, run)


def after(count: int, done: threading.Event) -> Callable[[], None]:
    """Set `done` on the `count`th call."""
    calls = [0]

    def call() -> None:
        calls[0] += 1
        if calls[0] == count:
            done.set()

    return call


def lines(core: Core) -> list[str]:
    return core.metrics.render().splitlines()


def test_jobs_run_in_their_order_each_with_its_metrics(core: Core) -> None:
    ran: list[str] = []
    done = threading.Event()
    jobs = [job("a", ran), job("b", ran), job("c", ran, after(2, done))]
    scheduler = Scheduler(core, jobs)
    scheduler.start()
    assert done.wait(10)
    scheduler.stop()
    assert ran[:6] == ["a", "b", "c", "a", "b", "c"]
    text = lines(core)
    for name in "abc":
        assert f'wanka_scheduled_job_runs_total{{job="{name}"}} {ran.count(name)}' in text
    last = scheduler.gauges()
    assert sorted(key for series in last.values() for key in series) == [
        (("job", "a"),), (("job", "b"),), (("job", "c"),)
    ]  # fmt: skip


def test_a_failing_job_ends_its_pass_is_counted_and_tried_again(core: Core) -> None:
    ran: list[str] = []
    done = threading.Event()
    twice = after(2, done)

    def boom() -> None:
        twice()
        raise ValueError("no")

    scheduler = Scheduler(core, [job("ok", ran), job("boom", ran, boom), job("never", ran)])
    scheduler.start()
    assert done.wait(10)
    scheduler.stop()
    assert "never" not in ran and ran[:4] == ["ok", "boom", "ok", "boom"]
    text = lines(core)
    failed = ran.count("boom")
    assert f'wanka_scheduled_job_failures_total{{job="boom"}} {failed}' in text
    assert f'wanka_scheduler_errors_total{{error="ValueError"}} {failed}' in text
    assert not any(line.startswith('wanka_scheduled_job_failures_total{job="ok"') for line in text)


def test_a_pass_that_cannot_get_the_write_gate_is_skipped(core: Core) -> None:
    ran: list[str] = []
    done = threading.Event()
    holder = object()
    core.writes.acquire(holder, 1, "sql")
    scheduler = Scheduler(core, [job("a", ran, after(1, done))])
    scheduler.start()
    try:
        deadline = time.monotonic() + 10
        while not any(line.startswith("wanka_scheduler_waits_total ") for line in lines(core)):
            assert time.monotonic() < deadline, "the scheduler never waited"
            time.sleep(TICK_S)
        assert ran == []
    finally:
        core.writes.release(holder)
    assert done.wait(10)
    scheduler.stop()


def test_other_writers_get_the_gate_between_a_jobs_transactions(core: Core) -> None:
    """A job's turns are per transaction: a writer waiting while the first runs gets the gate
    before the second, and /metrics counts each writer's time at the gate by its kind."""
    order: list[str] = []
    first_in, done = threading.Event(), threading.Event()

    def run(cur: Cursor, turn: Turn) -> None:
        if done.is_set():
            return  # one pass is enough
        with turn():
            first_in.set()
            deadline = time.monotonic() + 30
            while not core.writes._queue:  # until the other writer waits at the gate
                assert time.monotonic() < deadline, "the other writer never asked"
                time.sleep(0.01)
            time.sleep(0.1)
            order.append("job 1")
        with turn():
            order.append("job 2")
        done.set()

    def other() -> None:
        assert first_in.wait(30)
        with core.writes.hold(object(), 30, "remote_write"):
            order.append("remote_write")

    scheduler = Scheduler(core, [ScheduledJob("compaction", TICK_S, run)])
    writer = threading.Thread(target=other)
    writer.start()
    scheduler.start()
    try:
        assert done.wait(30)
    finally:
        scheduler.stop()
        writer.join(30)
    assert order == ["job 1", "remote_write", "job 2"]
    text = "\n".join(lines(core))
    held = float(
        text.split('wanka_write_gate_held_seconds_total{writer="compaction"} ')[1].split()[0]
    )
    waited = float(
        text.split('wanka_write_gate_wait_seconds_total{writer="remote_write"} ')[1].split()[0]
    )
    assert held >= 0.1 and waited >= 0.1


def test_a_job_took_the_longest_of_its_recent_runs(core: Core) -> None:
    """The refresh job reckons the next pass's upkeep from `took`: a compaction pass takes from
    milliseconds to seconds, so its last run alone would often promise a quick pass."""
    ran: list[str] = []
    done = threading.Event()
    sleeps = iter([0.2] + [0.0] * RECENT)
    seen: list[float] = []

    def probe() -> None:  # in the job after "varied": its run of this pass is counted
        seen.append(scheduler.took["varied"])
        if len(seen) == RECENT + 1:
            done.set()

    scheduler = Scheduler(
        core, [job("varied", ran, lambda: time.sleep(next(sleeps, 0.0))), job("probe", ran, probe)]
    )
    scheduler.start()
    assert done.wait(10)
    scheduler.stop()
    assert all(s >= 0.2 for s in seen[:RECENT])  # the slow run is among the last RECENT
    assert seen[RECENT] < 0.2  # and then it is not


def test_serve_runs_retention_then_tiers_then_compaction_then_refresh(core: Core) -> None:
    jobs = upkeep_jobs(10.0, core.metrics)
    assert [(j.name, j.interval_s) for j in jobs] == [
        ("retention", 10.0), ("tiers", 60.0), ("compaction", 10.0), ("refresh", 10.0)
    ]  # fmt: skip


def test_new_settings_restart_a_started_scheduler_with_their_interval(core: Core) -> None:
    scheduler = Scheduler(core)
    scheduler.apply(ServeSettings(None, refresh_interval_s=None))
    scheduler.start()
    assert scheduler.jobs == []
    scheduler.apply(ServeSettings(None, refresh_interval_s=30.0))
    assert [j.interval_s for j in scheduler.jobs] == [30.0, 60.0, 30.0, 30.0]  # tiers: a minute
    assert any(t.name == "wanka-scheduler" for t in threading.enumerate())
    scheduler.apply(ServeSettings(None, refresh_interval_s=None))
    assert scheduler.jobs == []
    assert not any(t.name == "wanka-scheduler" for t in threading.enumerate())
    scheduler.stop()


def test_an_event_that_drains_refreshes_health_findings_at_the_next_pass(core: Core) -> None:
    """health_findings has a minute's freshness target; a GPU that fell off the bus does not
    wait for it: the refresh job's next pass refreshes health_findings."""
    from tests.warehouse.remote_write.support import body, dcgm_labels
    from warehouse.ingest.batch import read_context
    from warehouse.ingest.models import ModelNames
    from warehouse.remote_write.decode import decode
    from warehouse.remote_write.rows import Limits, SeriesCache
    from warehouse.tsdb.append import append

    refresh = {j.name: j for j in upkeep_jobs(10.0, core.metrics)}["refresh"]
    cur = core.engine.cursor()
    cache = SeriesCache(ModelNames(read_context(core.engine).model_names))
    now = int(time.time() * 1000)
    xid = dcgm_labels(7, 3, "DCGM_FI_DEV_XID_ERRORS")

    def send(ts: int, code: float) -> None:
        append(cur, decode(body([(xid, [(ts, code)])]), cache, Limits()))

    def refreshes() -> int:
        sql = "SELECT count(*) FROM wanka.refresh_history WHERE name = 'health_findings'"
        return int(cur.execute(sql).fetchall()[0][0])

    def drained() -> bool:
        sql = "SELECT count(*) FROM health_findings WHERE rule = 'xid_drain' AND host = 'node007'"
        return bool(cur.execute(sql).fetchall()[0][0])

    send(now, 0.0)
    refresh.run(cur, contextlib.nullcontext)  # everything due refreshes: the first pass
    before = refreshes()
    send(now + 15_000, 0.0)
    refresh.run(cur, contextlib.nullcontext)
    assert refreshes() == before  # nothing urgent: health_findings waits for its target
    send(now + 30_000, 79.0)
    refresh.run(cur, contextlib.nullcontext)
    assert refreshes() == before + 1 and drained()


def test_each_run_is_logged_with_its_time_at_info_once_it_is_slow(
    core: Core, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    done = threading.Event()
    slow = job("slow", ran, lambda: time.sleep(0.05))
    scheduler = Scheduler(core, [job("quick", ran), slow, job("last", ran, after(1, done))])
    monkeypatch.setattr("service.serve.scheduler.SLOW_S", 0.04)
    with caplog.at_level("DEBUG", logger="wanka.scheduler"):
        scheduler.start()
        assert done.wait(10)
        scheduler.stop()
    first = {r.job: r for r in reversed(caplog.records)}  # type: ignore[attr-defined]
    assert first["quick"].levelname == "DEBUG" and first["slow"].levelname == "INFO"
    assert first["slow"].seconds >= 0.05  # type: ignore[attr-defined]
    assert first["slow"].getMessage().startswith("slow ran in 0.")
