"""Chains of dynamic tables, and joins with reference tables that wanka reloads."""

from __future__ import annotations

from pathlib import Path

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

HOURLY = (
    "CREATE DYNAMIC TABLE hourly WITH (freshness = '5 minutes') AS "
    "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, sum(value) AS s, count(*) AS n "
    "FROM gpu_metrics GROUP BY ALL"
)
DAILY = (
    "CREATE DYNAMIC TABLE daily WITH (freshness = 'downstream') AS "
    "SELECT date_trunc('day', hour) AS day, sum(s) AS s, sum(n) AS n FROM hourly GROUP BY ALL"
)


def _insert(eng: Engine, start_min: int, count: int) -> None:
    execute(
        eng.con,
        "INSERT INTO gpu_metrics (ts, host, metric, value) SELECT TIMESTAMPTZ '2026-11-01' + "
        "to_minutes(CAST($s + i * 7 AS BIGINT)), 'h' || i % 3, 'P', i FROM range($n) t(i)",
        {"s": start_min, "n": count},
    ).read_all()


def _rows(eng: Engine, sql: str) -> list[tuple[object, ...]]:
    return sorted(eng.con.sql(sql).fetchall(), key=repr)


def _refresh(eng: Engine, name: str) -> dict[str, object]:
    cur = eng.cursor()
    try:
        done: dict[str, object] = (
            execute(cur, f"REFRESH DYNAMIC TABLE {name}").read_all().to_pylist()[0]
        )
        return done
    finally:
        cur.close()


def test_a_rollup_of_a_rollup_refreshes_incrementally(warehouses: Warehouses) -> None:
    with warehouses.engine() as eng:
        _insert(eng, 0, 500)
        cur = eng.cursor()
        execute(cur, HOURLY).read_all()
        made = execute(cur, DAILY).read_all().to_pylist()[0]
        assert made["refresh_mode"] == "groups"
        _insert(eng, 5000, 50)  # a few new hours, on day 4 and 5
        assert _refresh(eng, "hourly")["refresh_mode"] == "incremental"
        done = _refresh(eng, "daily")
        assert done["refresh_mode"] == "incremental", done
        want = "SELECT date_trunc('day', hour), sum(s), sum(n) FROM hourly GROUP BY ALL"
        assert _rows(eng, "SELECT * FROM daily") == _rows(eng, want)
        # nothing new upstream: nothing to do downstream
        assert _refresh(eng, "daily")["refresh_mode"] == "no_data"
        # the log of hourly keeps only what daily has not seen
        assert _rows(eng, 'SELECT count(*) FROM wanka."changes_hourly"') == [(0,)]
        cur.close()


def test_dropping_the_chain_drops_its_log(warehouses: Warehouses) -> None:
    with warehouses.engine() as eng:
        _insert(eng, 0, 10)
        cur = eng.cursor()
        execute(cur, HOURLY).read_all()
        execute(cur, DAILY).read_all()
        execute(cur, "DROP DYNAMIC TABLE daily").read_all()
        _insert(eng, 100, 10)
        assert _refresh(eng, "hourly")["refresh_mode"] == "incremental"  # triggers still work
        execute(cur, "DROP DYNAMIC TABLE hourly").read_all()
        logs = "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'changes_hourly'"
        assert _rows(eng, logs) == [(0,)]
        execute(cur, HOURLY).read_all()  # and it can be made again
        execute(cur, DAILY).read_all()
        cur.close()


def test_a_projection_of_a_dynamic_table_is_full_and_says_why(warehouses: Warehouses) -> None:
    with warehouses.engine() as eng:
        cur = eng.cursor()
        execute(cur, HOURLY).read_all()
        made = execute(
            cur,
            "CREATE DYNAMIC TABLE busy WITH (freshness = '1 hour') AS "
            "SELECT hour, host FROM hourly WHERE n > 10",
        ).read_all()
        row = made.to_pylist()[0]
        assert row["refresh_mode"] == "full"
        assert "reads dynamic table hourly without GROUP BY" in row["reason"]
        cur.close()


def test_a_reference_reload_makes_the_next_refresh_full(fresh_db: Path) -> None:
    db = str(fresh_db)
    with Engine(db) as eng:
        eng.con.execute("INSERT INTO nodes (host, gpu_model) VALUES ('h0', 'H100'), ('h1', 'A100')")
        _insert(eng, 0, 30)
        cur = eng.cursor()
        made = execute(
            cur,
            "CREATE DYNAMIC TABLE tdp WITH (freshness = '1 hour') AS "
            "SELECT g.model, sum(m.value) AS s, max(g.tdp_w) AS tdp_w FROM gpu_metrics m "
            "JOIN nodes n ON n.host = m.host JOIN gpu_models g ON g.model = n.gpu_model "
            "GROUP BY ALL",
        ).read_all()
        assert made.to_pylist()[0]["refresh_mode"] == "aggregate"
        _insert(eng, 300, 30)
        assert _refresh(eng, "tdp")["refresh_mode"] == "incremental"
        # as if a new wanka shipped another gpu_models.csv: the next open reloads it
        eng.con.execute("DELETE FROM wanka.reference_loads WHERE table_name = 'gpu_models'")
        cur.close()
    with Engine(db) as eng:
        assert _refresh(eng, "tdp")["refresh_mode"] == "full"
        reason = eng.con.sql(
            "SELECT refresh_mode_reason FROM wanka.refresh_history ORDER BY started_at DESC LIMIT 1"
        ).fetchall()[0][0]
        assert reason.startswith("reference table gpu_models was reloaded"), reason
