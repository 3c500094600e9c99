"""DYNAMIC TABLE statements through the one query path and the `wanka` command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import invoke_wanka
from tests.warehouses import Warehouses
from warehouse.dynamic.shipped import install_shipped
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

ROLLUP = (
    "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, avg(value) AS a, "
    "count(*) AS n FROM gpu_metrics GROUP BY ALL"
)
SEED = (
    "INSERT INTO gpu_metrics (ts, host, metric, value) SELECT TIMESTAMPTZ '2026-11-01' "
    "+ i * INTERVAL 7 MINUTE, 'h' || i % 3, 'U', i FROM range(40) t(i)"
)


def rows(eng: Engine, sql: str) -> list[dict[str, Any]]:
    cur = eng.cursor()
    try:
        out: list[dict[str, Any]] = execute(cur, sql).read_all().to_pylist()
        return out
    finally:
        cur.close()


@pytest.fixture
def eng(fresh_db: Path) -> Engine:
    engine = Engine(str(fresh_db))
    execute(engine.con, SEED).read_all()
    return engine


def test_create_refresh_alter_drop(eng: Engine) -> None:
    made = rows(eng, f"CREATE DYNAMIC TABLE hh WITH (freshness = '5 minutes') AS {ROLLUP}")
    assert made[0]["status"] == "created" and made[0]["refresh_mode"] == "aggregate"
    assert rows(eng, "SELECT count(*) AS n FROM hh") == rows(
        eng, f"SELECT count(*) AS n FROM ({ROLLUP})"
    )
    execute(eng.con, SEED).read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE hh")[0]
    assert done["refresh_mode"] == "incremental" and done["rows_inserted"] > 0
    assert rows(eng, f"SELECT * FROM hh EXCEPT {ROLLUP}") == []
    assert rows(eng, "REFRESH DYNAMIC TABLE hh FULL")[0]["refresh_mode"] == "full"
    assert rows(eng, "REFRESH DYNAMIC TABLE hh")[0]["refresh_mode"] == "no_data"
    rows(eng, "ALTER DYNAMIC TABLE hh SET (freshness = '1 hour')")
    info = rows(eng, "SELECT freshness, resolved_mode, watermark FROM wanka.dynamic_tables")
    assert info[0]["freshness"] == "1 hour" and info[0]["resolved_mode"] == "aggregate"
    history = rows(eng, "SELECT refresh_mode, state FROM wanka.refresh_history ORDER BY started_at")
    assert [h["refresh_mode"] for h in history] == ["full", "incremental", "full", "no_data"]
    assert {h["state"] for h in history} == {"succeeded"}
    assert rows(eng, "DROP DYNAMIC TABLE hh")[0]["status"] == "dropped"
    assert rows(eng, "SELECT count(*) AS n FROM wanka.dynamic_tables") == [{"n": 0}]
    with pytest.raises(UserError, match="no dynamic table named hh"):
        rows(eng, "REFRESH DYNAMIC TABLE hh")


def test_refresh_refreshes_the_dynamic_tables_it_reads_first(eng: Engine) -> None:
    """As `wanka refresh NAME` does: a downstream table refreshed alone used to find its source
    unchanged (no_data) while the telemetry under that source had moved on."""
    rows(eng, f"CREATE DYNAMIC TABLE hh WITH (freshness = '1 hour') AS {ROLLUP}")
    total = "SELECT host, sum(n) AS n FROM hh GROUP BY host"
    rows(eng, f"CREATE DYNAMIC TABLE per_host WITH (freshness = '1 hour') AS {total}")
    execute(eng.con, SEED).read_all()
    [done] = rows(eng, "REFRESH DYNAMIC TABLE per_host")
    assert done["name"] == "per_host" and done["refresh_mode"] == "incremental"
    assert done["upstream"] == "hh: incremental"
    assert rows(eng, "SELECT sum(n) AS n FROM per_host") == [{"n": 80}]
    stamps = rows(eng, "SELECT DISTINCT data_timestamp FROM wanka.dynamic_tables")
    assert len(stamps) == 1  # the chain stands for one moment
    plain = rows(eng, "REFRESH DYNAMIC TABLE hh")[0]
    assert plain["refresh_mode"] == "no_data" and plain["upstream"] is None


def test_a_script_mixes_dynamic_and_plain_statements(eng: Engine) -> None:
    out = rows(
        eng,
        "CREATE DYNAMIC TABLE a WITH (freshness = '1 minute') AS SELECT host, value FROM "
        "gpu_metrics WHERE value > 10; SELECT count(*) AS n FROM a",
    )
    assert out == [{"n": 29}]


def test_update_or_delete_recomputes_the_affected_groups(eng: Engine) -> None:
    rows(eng, f"CREATE DYNAMIC TABLE hh WITH (freshness = '5 minutes') AS {ROLLUP}")
    execute(eng.con, "UPDATE gpu_metrics SET value = value + 1 WHERE host = 'h1'").read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE hh")[0]
    assert done["refresh_mode"] == "incremental"
    assert done["reason"] == (
        "update of 13 rows on gpu_metrics since the last refresh: "
        "recomputed the 5 groups those rows belong to"
    )
    assert rows(eng, f"SELECT * FROM hh EXCEPT {ROLLUP}") == []
    assert rows(eng, f"SELECT count(*) AS n FROM ({ROLLUP} EXCEPT SELECT * FROM hh)") == [{"n": 0}]
    # the log is trimmed once every dynamic table has seen it
    assert rows(eng, 'SELECT count(*) AS n FROM wanka."changes_gpu_metrics"') == [{"n": 0}]


def test_the_change_log_is_kept_until_every_reader_has_seen_it(eng: Engine) -> None:
    log = 'SELECT kind, count(*) AS n FROM wanka."changes_gpu_metrics" GROUP BY ALL ORDER BY 1'
    rows(eng, f"CREATE DYNAMIC TABLE one WITH (freshness = '5 minutes') AS {ROLLUP}")
    rows(eng, f"CREATE DYNAMIC TABLE two WITH (freshness = '5 minutes') AS {ROLLUP}")
    execute(eng.con, "UPDATE gpu_metrics SET value = -value WHERE host = 'h2'").read_all()
    assert rows(eng, log) == [{"kind": "deleted", "n": 13}, {"kind": "inserted", "n": 13}]
    rows(eng, "REFRESH DYNAMIC TABLE one")
    assert len(rows(eng, log)) == 2  # two has not seen them yet
    assert rows(eng, "REFRESH DYNAMIC TABLE two")[0]["refresh_mode"] == "incremental"
    assert rows(eng, log) == []
    assert rows(eng, f"SELECT count(*) AS n FROM (SELECT * FROM two EXCEPT {ROLLUP})") == [{"n": 0}]


def test_an_append_plan_still_goes_full_after_a_delete(eng: Engine) -> None:
    query = "SELECT host, value FROM gpu_metrics"
    rows(eng, f"CREATE DYNAMIC TABLE a WITH (freshness = '5 minutes') AS {query}")
    execute(eng.con, "DELETE FROM gpu_metrics WHERE host = 'h1'").read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE a")[0]
    assert done["refresh_mode"] == "full" and "delete of 13 rows on gpu_metrics" in done["reason"]
    assert rows(eng, f"SELECT count(*) AS n FROM (SELECT * FROM a EXCEPT {query})") == [{"n": 0}]


def test_count_distinct_is_incremental_by_groups(eng: Engine) -> None:
    query = (
        "SELECT host, count(DISTINCT CAST(value AS INTEGER) % 4) AS d, median(value) AS m "
        "FROM gpu_metrics GROUP BY host"
    )
    made = rows(
        eng,
        "CREATE DYNAMIC TABLE g WITH (freshness = '1 hour', refresh_mode = 'incremental') "
        f"AS {query}",
    )[0]
    assert made["refresh_mode"] == "groups" and made["reason"] is None
    execute(eng.con, SEED.replace("'h' || i % 3", "'h9'")).read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE g")[0]
    assert (done["refresh_mode"], done["rows_inserted"], done["rows_deleted"]) == (
        "incremental",
        1,
        0,
    )
    execute(eng.con, "DELETE FROM gpu_metrics WHERE host = 'h0' AND value > 20").read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE g")[0]
    assert done["refresh_mode"] == "incremental" and "recomputed the 1 groups" in done["reason"]
    assert (done["rows_inserted"], done["rows_deleted"]) == (1, 1)
    assert rows(eng, "REFRESH DYNAMIC TABLE g")[0]["refresh_mode"] == "no_data"
    assert rows(eng, f"SELECT count(*) AS n FROM (SELECT * FROM g EXCEPT {query})") == [{"n": 0}]
    assert rows(eng, f"SELECT count(*) AS n FROM ({query} EXCEPT SELECT * FROM g)") == [{"n": 0}]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (
            "SELECT host, row_number() OVER (ORDER BY ts) AS n FROM gpu_metrics",
            "window function without PARTITION BY",
        ),
        ("SELECT host, now() AS t FROM gpu_metrics", "now() is not deterministic"),
        ("SELECT host, random() AS r FROM gpu_metrics", "random() is not deterministic"),
    ],
)
def test_incremental_is_refused_and_auto_goes_full(eng: Engine, query: str, reason: str) -> None:
    with pytest.raises(UserError, match="refresh_mode = 'incremental' is refused for x: "):
        rows(
            eng,
            "CREATE DYNAMIC TABLE x WITH (freshness = '1 hour', refresh_mode = 'incremental') "
            f"AS {query}",
        )
    made = rows(eng, f"CREATE DYNAMIC TABLE x WITH (freshness = '1 hour') AS {query}")[0]
    assert made["refresh_mode"] == "full" and reason in made["reason"]
    recorded = rows(
        eng,
        "SELECT refresh_mode, resolved_mode, refresh_mode_reason AS r FROM wanka.dynamic_tables",
    )
    assert recorded[0]["refresh_mode"] == "auto" and reason in recorded[0]["r"]


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ("freshness = 'soon'", "freshness"),
        ("freshness = '1 hour', refresh_mode = 'sometimes'", "refresh_mode"),
        ("freshness = '1 hour', colour = 'red'", "colour"),
    ],
)
def test_bad_properties_name_the_property(eng: Engine, props: str, named: str) -> None:
    with pytest.raises(UserError, match=named):
        rows(eng, f"CREATE DYNAMIC TABLE x WITH ({props}) AS SELECT host FROM gpu_metrics")


def test_failed_refresh_is_recorded(eng: Engine) -> None:
    rows(
        eng,
        "CREATE DYNAMIC TABLE x WITH (freshness = '1 hour') AS SELECT host, value FROM gpu_metrics",
    )
    eng.con.execute("ALTER TABLE x ADD COLUMN extra INTEGER NOT NULL DEFAULT 1")
    eng.con.execute("ALTER TABLE x ALTER COLUMN extra DROP DEFAULT")
    execute(eng.con, SEED).read_all()
    with pytest.raises(Exception, match="refresh of dynamic table x failed"):
        rows(eng, "REFRESH DYNAMIC TABLE x")
    assert rows(eng, "SELECT state FROM wanka.dynamic_tables") == [{"state": "failed"}]
    last = rows(
        eng, "SELECT state, error FROM wanka.refresh_history ORDER BY started_at DESC LIMIT 1"
    )
    assert last[0]["state"] == "failed" and last[0]["error"]


def test_shipped_definitions_install(eng: Engine) -> None:
    assert sorted(install_shipped(eng)) == [
        "energy_cluster_daily",
        "gpu_hourly_host",
        "gpu_risk",
        "gpu_windows",
        "health_findings",
        "job_gpu_hours_daily",
        "job_gpu_usage",
        "job_gpu_usage_by_gpu",
        "job_gpu_usage_daily",
        "node_risk",
        "node_risk_fleet",
        "node_risk_settings",
        "xid_errors_by_model",
    ]
    assert install_shipped(eng) == []
    modes = dict(eng.con.sql("SELECT name, resolved_mode FROM wanka.dynamic_tables").fetchall())
    # the rollups merge their deltas, over a join too; a count(DISTINCT) recomputes its groups
    assert modes == {
        "gpu_hourly_host": "aggregate",
        "gpu_windows": "aggregate",
        "health_findings": "full",
        "job_gpu_hours_daily": "aggregate",
        "energy_cluster_daily": "aggregate",
        "job_gpu_usage_daily": "aggregate",
        "job_gpu_usage_by_gpu": "groups",
        "job_gpu_usage": "groups",
        "xid_errors_by_model": "groups",
        # the risk score: the fleet's row and every node's decay move with each new piece
        "node_risk_fleet": "groups",
        "node_risk_settings": "aggregate",
        "node_risk": "groups",
        "gpu_risk": "groups",
    }


def test_cli_sql_and_refresh(db_path: Path, warehouses: Warehouses) -> None:
    warehouses.empty(db_path)
    db = ["--db", str(db_path)]
    create = invoke_wanka(
        *db,
        "sql",
        f"CREATE DYNAMIC TABLE hh WITH (freshness = '1 second') AS {ROLLUP}",
        "--format",
        "json",
    )
    assert create.returncode == 0, create.stderr
    assert json.loads(create.stdout)[0]["status"] == "created"
    assert invoke_wanka(*db, "sql", SEED).returncode == 0
    done = invoke_wanka(*db, "refresh", "hh")
    assert done.returncode == 0, done.stderr
    assert "incremental" in done.stdout
    assert invoke_wanka(*db, "refresh", "--full").returncode == 0
    bad = invoke_wanka(*db, "refresh", "nope")
    assert bad.returncode == 2 and "no dynamic table named nope" in bad.stderr
    refused = invoke_wanka(
        *db, "sql", "CREATE DYNAMIC TABLE y WITH (freshness = 'soon') AS SELECT 1"
    )
    assert refused.returncode == 2 and "freshness" in refused.stderr


def test_a_failed_drop_rolls_back_and_leaves_no_transaction_open(eng: Engine) -> None:
    """DROP DYNAMIC TABLE runs in a transaction; an error inside it must roll it back."""
    cur = eng.cursor()
    try:
        execute(cur, f"CREATE DYNAMIC TABLE hh WITH (freshness = '1 hour') AS {ROLLUP}").read_all()
        # something else now stands where the table was: dropping it as a table fails midway
        cur.execute('DROP TABLE main."hh"')
        cur.execute('CREATE VIEW main."hh" AS SELECT 1 AS x')
        with pytest.raises(UserError, match="cannot drop dynamic table hh"):
            execute(cur, "DROP DYNAMIC TABLE hh").read_all()
        # before: the transaction stayed open, so this BEGIN failed ("already active")
        cur.execute("BEGIN TRANSACTION")
        cur.execute("ROLLBACK")
        assert cur.execute("SELECT name FROM wanka.dynamic_tables").fetchall() == [("hh",)]
    finally:
        cur.close()
