"""The scheduler: due by freshness at an explicit clock, chains, failures, backoff, the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.conftest import invoke_wanka
from tests.warehouses import Warehouses
from warehouse.dynamic.history import RefreshResult
from warehouse.dynamic.schedule import SLACK, Failed, Skipped, backoff, run_due
from warehouse.errors import WankaError
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

SEED = (
    "INSERT INTO gpu_metrics (ts, host, metric, value) SELECT TIMESTAMPTZ '2026-11-01' "
    "+ i * INTERVAL 7 MINUTE, 'h' || i % 3, '7', i FROM range(40) t(i)"
)
# CAST(metric AS INTEGER) fails once a row with a non-numeric metric arrives: a failing refresh.
FRAGILE = (
    "SELECT host, sum(CAST(metric AS INTEGER)) AS m, count(*) AS n FROM gpu_metrics GROUP BY ALL"
)
BAD_ROW = (
    "INSERT INTO gpu_metrics (ts, host, metric, value) "
    "VALUES (TIMESTAMPTZ '2026-11-02', 'x', 'oops', 1)"
)
T0 = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)


@pytest.fixture
def cur(fresh_db: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    with Engine(str(fresh_db)) as eng:
        execute(eng.con, SEED).read_all()
        cursor = eng.cursor()
        try:
            yield cursor
        finally:
            cursor.close()


def create(cur: duckdb.DuckDBPyConnection, name: str, freshness: str, query: str) -> None:
    execute(
        cur, f"CREATE DYNAMIC TABLE {name} WITH (freshness = '{freshness}') AS {query}"
    ).read_all()


def names(outcomes: list[RefreshResult | Failed | Skipped]) -> list[str]:
    return [o.name for o in outcomes]


def catalog_row(cur: duckdb.DuckDBPyConnection, name: str) -> tuple[object, ...]:
    rows = cur.execute(
        "SELECT state, failures, next_attempt_at, data_timestamp FROM wanka.dynamic_tables "
        "WHERE name = ?",
        [name],
    ).fetchall()
    return rows[0]


def test_due_when_it_would_otherwise_become_staler_than_its_freshness(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    create(cur, "hosts", "5 minutes", "SELECT host, count(*) AS n FROM gpu_metrics GROUP BY ALL")
    assert names(run_due(cur, T0)) == ["hosts"]  # stale: created a day before T0
    assert run_due(cur, T0 + timedelta(minutes=4)) == []
    [done] = run_due(cur, T0 + timedelta(minutes=5))
    assert isinstance(done, RefreshResult) and done.data_timestamp == T0 + timedelta(minutes=5)
    # a refresh expected to take 2 minutes starts 2 minutes (and SLACK of its 5 minutes: 3 s)
    # before the lag would pass 5 minutes
    cur.execute(
        "UPDATE wanka.refresh_history SET finished_at = started_at + INTERVAL 2 MINUTE "
        "WHERE started_at = (SELECT max(started_at) FROM wanka.refresh_history)"
    )
    ahead = timedelta(seconds=SLACK * 300)
    assert ahead == timedelta(seconds=3)
    assert run_due(cur, T0 + timedelta(minutes=8) - ahead - timedelta(seconds=1)) == []
    assert names(run_due(cur, T0 + timedelta(minutes=8) - ahead)) == ["hosts"]


def test_a_loop_refreshes_what_would_be_late_by_its_next_pass(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    """`wanka serve` passes every 10 s: a table whose deadline falls before the next pass is
    refreshed now, so its data is never staler than its freshness (it was, by up to a pass)."""
    create(cur, "hosts", "1 minute", "SELECT host, count(*) AS n FROM gpu_metrics GROUP BY ALL")
    assert names(run_due(cur, T0)) == ["hosts"]
    cur.execute(  # a refresh that takes no time
        "UPDATE wanka.refresh_history SET finished_at = started_at "
        "WHERE started_at = (SELECT max(started_at) FROM wanka.refresh_history)"
    )
    # and MIN_SLACK_S (3 s) ahead: 1 % of a minute is less than a wait for the write gate
    assert run_due(cur, T0 + timedelta(seconds=46), next_pass_s=10) == []
    assert names(run_due(cur, T0 + timedelta(seconds=47), next_pass_s=10)) == ["hosts"]


def test_downstream_refreshes_only_when_a_due_table_reads_it(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    create(cur, "base_d", "downstream", "SELECT host, value FROM gpu_metrics")
    create(cur, "lone_d", "downstream", "SELECT host FROM gpu_metrics")
    create(cur, "top", "5 minutes", "SELECT host, sum(value) AS v FROM base_d GROUP BY ALL")
    # top is stale at T0 and brings base_d along; nothing needs lone_d
    assert names(run_due(cur, T0)) == ["base_d", "top"]
    assert run_due(cur, T0 + timedelta(minutes=4)) == []
    assert names(run_due(cur, T0 + timedelta(minutes=5))) == ["base_d", "top"]
    assert "lone_d" not in names(run_due(cur, T0 + timedelta(days=365)))


def test_a_chain_refreshes_in_dependency_order_at_one_data_timestamp(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    create(cur, "zz_hourly", "1 hour", "SELECT host, sum(value) AS v FROM gpu_metrics GROUP BY ALL")
    create(cur, "aa_total", "5 minutes", "SELECT sum(v) AS total FROM zz_hourly")
    run_due(cur, T0)
    execute(cur, SEED).read_all()
    at = T0 + timedelta(minutes=5)  # only aa_total is due; what it reads comes along
    done = run_due(cur, at)
    assert names(done) == ["zz_hourly", "aa_total"]
    assert all(isinstance(d, RefreshResult) and d.data_timestamp == at for d in done)
    stamps = cur.execute(
        "SELECT DISTINCT data_timestamp FROM wanka.dynamic_tables "
        "UNION ALL SELECT DISTINCT data_timestamp FROM wanka.refresh_history "
        "WHERE started_at >= (SELECT min(started_at) FROM wanka.refresh_history "
        "WHERE data_timestamp = ?)",
        [at],
    ).fetchall()
    assert {s for (s,) in stamps} == {at}
    assert (
        cur.execute("SELECT total FROM aa_total").fetchall()
        == cur.execute("SELECT sum(value) FROM gpu_metrics").fetchall()
    )


def test_failure_backs_off_marks_readers_and_recovers(cur: duckdb.DuckDBPyConnection) -> None:
    create(cur, "fragile", "5 minutes", FRAGILE)
    create(cur, "reader", "5 minutes", "SELECT sum(n) AS n FROM fragile")
    create(cur, "reader2", "downstream", "SELECT n FROM reader")
    create(cur, "other", "5 minutes", "SELECT count(*) AS n FROM gpu_metrics")
    run_due(cur, T0)
    execute(cur, BAD_ROW).read_all()
    t1 = T0 + timedelta(minutes=10)
    done = {o.name: o for o in run_due(cur, t1)}
    failed = done["fragile"]
    assert isinstance(failed, Failed) and "fragile" in failed.error
    assert (
        isinstance(done["reader"], Skipped) and "upstream fragile failed" in done["reader"].reason
    )
    assert isinstance(done["other"], RefreshResult)  # unrelated tables still refresh
    assert catalog_row(cur, "fragile")[:3] == ("failed", 1, t1 + timedelta(seconds=30))
    assert catalog_row(cur, "reader")[0] == catalog_row(cur, "reader2")[0] == "upstream_failed"
    [(state, error)] = cur.execute(
        "SELECT state, error FROM wanka.refresh_history WHERE name = 'fragile' "
        "ORDER BY started_at DESC LIMIT 1"
    ).fetchall()
    assert state == "failed" and error

    # not retried before next_attempt_at; its readers stay skipped
    early = {o.name: o for o in run_due(cur, t1 + timedelta(seconds=29))}
    assert isinstance(early["fragile"], Skipped) and "next attempt" in early["fragile"].reason
    assert isinstance(early["reader"], Skipped)
    assert catalog_row(cur, "fragile")[1] == 1
    # retried at next_attempt_at: fails again and waits twice as long
    t2 = t1 + timedelta(seconds=30)
    again = {o.name: o for o in run_due(cur, t2)}
    assert isinstance(again["fragile"], Failed)
    assert catalog_row(cur, "fragile")[:3] == ("failed", 2, t2 + timedelta(seconds=60))
    # a named refresh ignores the backoff
    [named] = run_due(cur, t2 + timedelta(seconds=1), name="fragile")
    assert isinstance(named, Failed) and named.failures == 3

    execute(cur, "DELETE FROM gpu_metrics WHERE metric = 'oops'").read_all()
    t3 = t2 + timedelta(minutes=5)
    recovered = {o.name: o for o in run_due(cur, t3)}
    assert all(isinstance(recovered[n], RefreshResult) for n in ("fragile", "reader", "reader2"))
    for name in ("fragile", "reader", "reader2"):
        assert catalog_row(cur, name) == ("active", 0, None, t3)
    assert cur.execute("SELECT n FROM reader2").fetchall() == [(40,)]


def test_backoff_doubles_up_to_an_hour() -> None:
    assert [backoff(n).total_seconds() for n in (1, 2, 3, 7, 8, 20)] == [
        30,
        60,
        120,
        1920,
        3600,
        3600,
    ]


def test_wanka_refresh_prints_one_line_per_table(db_path: Path, warehouses: Warehouses) -> None:
    with Engine(str(warehouses.empty(db_path))) as eng:
        execute(eng.con, SEED).read_all()
        cur = eng.cursor()
        create(cur, "good", "5 minutes", "SELECT host, count(*) AS n FROM gpu_metrics GROUP BY ALL")
        create(cur, "fragile", "5 minutes", FRAGILE)
        cur.close()
    nothing = invoke_wanka("--db", str(db_path), "refresh")  # both just made, nothing since
    assert nothing.returncode == 0, nothing.stderr
    assert nothing.stdout.strip() == (
        "nothing to refresh: no dynamic table is due or has changed sources"
    )
    with Engine(str(db_path)) as eng:
        execute(eng.con, BAD_ROW).read_all()

    good = invoke_wanka("--db", str(db_path), "refresh", "good")
    assert good.returncode == 0, good.stderr
    assert (
        good.stdout.startswith("good: incremental, 1 rows inserted, 0 deleted, ")
        and " s" in good.stdout
    )

    # neither is due by its freshness; fragile's source changed since its last refresh (as
    # did that of the shipped tables the first command installed, which read gpu_metrics too)
    bad = invoke_wanka("--db", str(db_path), "refresh")
    assert bad.returncode == 1
    lines = {line.split(":")[0]: line for line in bad.stdout.splitlines()}
    assert lines["fragile"].startswith("fragile: FAILED after ") and "retry after" in bad.stdout
    assert "good" not in lines  # refreshed above: nothing changed for it since
    assert f"1 of {len(lines)} refreshes failed: fragile" in bad.stderr

    waiting = invoke_wanka("--db", str(db_path), "refresh")  # fragile is due but backs off
    assert waiting.returncode == 0, waiting.stderr
    assert waiting.stdout.startswith("fragile: skipped: failed 1 times in a row; next attempt")

    named = invoke_wanka("--db", str(db_path), "refresh", "fragile", "--full")  # no backoff
    assert named.returncode == 1 and named.stdout.startswith("fragile: FAILED after ")

    unknown = invoke_wanka("--db", str(db_path), "refresh", "nope")
    assert unknown.returncode == 2 and "no dynamic table named nope" in unknown.stderr


def _failure_record(cur: duckdb.DuckDBPyConnection) -> tuple[object, ...]:
    """What a failed refresh of `fragile` left: its catalog row, its reader's, its history."""
    table = cur.execute(
        "SELECT state, error IS NOT NULL, failures, next_attempt_at IS NOT NULL "
        "FROM wanka.dynamic_tables WHERE name = 'fragile'"
    ).fetchall()
    reader = cur.execute(
        "SELECT state, error FROM wanka.dynamic_tables WHERE name = 'reader'"
    ).fetchall()
    history = cur.execute(
        "SELECT state, refresh_mode, error IS NOT NULL FROM wanka.refresh_history "
        "WHERE name = 'fragile' AND state = 'failed'"
    ).fetchall()
    return table[0], reader[0], history


@pytest.mark.parametrize("face", ["sql", "scheduler"])
def test_a_failed_refresh_is_recorded_the_same_way_from_sql_and_the_scheduler(
    cur: duckdb.DuckDBPyConnection, face: str
) -> None:
    """One failure path: state, error, failure count, backoff, readers and one history row."""
    create(cur, "fragile", "1 hour", FRAGILE)
    create(cur, "reader", "1 hour", "SELECT host, sum(m) AS m FROM fragile GROUP BY host")
    execute(cur, BAD_ROW).read_all()
    if face == "sql":
        with pytest.raises(WankaError, match="refresh of dynamic table fragile failed"):
            execute(cur, "REFRESH DYNAMIC TABLE fragile").read_all()
    else:
        (failed,) = run_due(cur, T0, name="fragile")
        assert isinstance(failed, Failed) and failed.failures == 1
    # SQL REFRESH used to leave failures at 0, no next attempt and its readers 'active'
    assert _failure_record(cur) == (
        ("failed", True, 1, True),
        ("upstream_failed", "upstream dynamic table fragile failed"),
        [("failed", "incremental", True)],
    )


def test_a_scheduled_refresh_writes_its_history_row_once_at_the_runs_timestamp(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    create(cur, "rollup", "1 hour", FRAGILE)
    execute(cur, SEED).read_all()
    (done,) = run_due(cur, T0, name="rollup")
    assert isinstance(done, RefreshResult) and done.data_timestamp == T0
    stamps = cur.execute(
        "SELECT h.data_timestamp, d.data_timestamp FROM wanka.refresh_history h "
        "JOIN wanka.dynamic_tables d USING (name) WHERE name = 'rollup' "
        "ORDER BY h.started_at DESC LIMIT 1"
    ).fetchall()
    assert stamps == [(T0, T0)]


def test_a_manual_refresh_brings_what_changed_up_to_date_and_the_scheduler_waits(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    """`wanka refresh` (changed=True) refreshes every table whose sources changed, a chain in
    dependency order in one run; the scheduler's timing is its freshness, as before."""
    create(cur, "zz_hourly", "1 hour", "SELECT host, sum(value) AS v FROM gpu_metrics GROUP BY ALL")
    create(cur, "aa_total", "1 hour", "SELECT sum(v) AS total FROM zz_hourly")
    create(cur, "by_gpus", "1 hour", "SELECT gpus, count(*) AS n FROM nodes GROUP BY ALL")
    assert names(run_due(cur, T0)) == ["zz_hourly", "aa_total", "by_gpus"]
    execute(cur, SEED).read_all()
    later = T0 + timedelta(minutes=1)
    assert run_due(cur, later) == []  # none is due by its freshness
    # aa_total's source changes only when zz_hourly's refresh rewrites it, earlier in the run
    done = run_due(cur, later, changed=True)
    assert names(done) == ["zz_hourly", "aa_total"]
    assert all(isinstance(d, RefreshResult) and d.refresh_mode != "no_data" for d in done)
    assert (
        cur.execute("SELECT total FROM aa_total").fetchall()
        == cur.execute("SELECT sum(value) FROM gpu_metrics").fetchall()
    )
    assert run_due(cur, later, changed=True) == []  # up to date now
    # still due by freshness when nothing changed: an hour after the run
    assert names(run_due(cur, later + timedelta(hours=1), changed=True)) == [
        "zz_hourly",
        "aa_total",
        "by_gpus",
    ]


def test_a_named_refresh_refreshes_what_it_reads_first(cur: duckdb.DuckDBPyConnection) -> None:
    create(cur, "zz_hourly", "1 hour", "SELECT host, sum(value) AS v FROM gpu_metrics GROUP BY ALL")
    create(cur, "mid", "downstream", "SELECT sum(v) AS total FROM zz_hourly")
    create(cur, "aa_top", "1 hour", "SELECT total * 2 AS twice FROM mid")
    create(cur, "lone", "1 hour", "SELECT count(*) AS n FROM gpu_metrics")
    execute(cur, SEED).read_all()
    done = run_due(cur, T0, name="aa_top", full=True)
    assert names(done) == ["zz_hourly", "mid", "aa_top"]  # not lone
    asked = [
        d.reason == "a full refresh was asked for" for d in done if isinstance(d, RefreshResult)
    ]
    assert asked == [False, False, True]  # --full is for the named table
    assert {d.data_timestamp for d in done if isinstance(d, RefreshResult)} == {T0}
    assert (
        cur.execute("SELECT twice FROM aa_top").fetchall()
        == cur.execute("SELECT 2 * sum(value) FROM gpu_metrics").fetchall()
    )


def test_a_named_refresh_skips_its_table_when_what_it_reads_fails(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    create(cur, "fragile", "1 hour", FRAGILE)
    create(cur, "reader", "1 hour", "SELECT sum(n) AS n FROM fragile")
    execute(cur, BAD_ROW).read_all()
    failed, skipped = run_due(cur, T0, name="reader")
    assert isinstance(failed, Failed) and failed.name == "fragile"
    assert isinstance(skipped, Skipped) and skipped.reason == "upstream fragile failed"
    # the backoff does not hold back a named refresh: fragile is tried again at once
    again = run_due(cur, T0 + timedelta(seconds=1), name="reader")
    assert isinstance(again[0], Failed) and again[0].failures == 2


def test_a_table_whose_refresh_would_end_late_behind_the_run_is_due_with_it() -> None:
    """`b` alone is not due yet, but after `a`'s 20 s refresh in the same run it would end
    past its target: it is refreshed in this run."""
    from warehouse.dynamic.schedule import Entry, _due

    def entry(name: str, age_s: float, expected_s: float) -> Entry:
        at = T0 - timedelta(seconds=age_s)
        return Entry(name, 300.0, at, "succeeded", 0, None, (), expected_s)

    tables = {"a": entry("a", 295, 20.0), "b": entry("b", 285, 1.0), "c": entry("c", 100, 1.0)}
    assert _due(tables, T0) == ["a", "b"]
    tables["a"] = entry("a", 100, 20.0)
    assert _due(tables, T0) == []  # nothing due: nothing runs before b
