"""Retention: old raw rows go, what dynamic tables derived from them stays, FULL keeps it too."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, invoke_wanka
from tests.warehouses import Warehouses
from warehouse.dynamic import retention as checked
from warehouse.dynamic.shipped import install_shipped
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.security.policy import Refused, authorize
from warehouse.tsdb import retention, tiers

START = datetime(2026, 11, 1, tzinfo=UTC)
HOURLY = (
    "CREATE DYNAMIC TABLE hourly WITH (freshness = '5 minutes') AS "
    "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, sum(value) AS s, count(*) AS n, "
    "min(value) AS lo, max(value) AS hi FROM gpu_metrics GROUP BY ALL"
)
DAILY_JOIN = (
    "CREATE DYNAMIC TABLE daily WITH (freshness = '5 minutes') AS "
    "SELECT date_trunc('day', m.ts) AS day, n.cluster, count(*) AS n, sum(m.value) AS s "
    "FROM gpu_metrics m JOIN nodes n ON n.host = m.host GROUP BY ALL"
)


def _insert(
    eng: Engine, first_minute: int, count: int, step_min: int = 37, second: int = 0
) -> None:
    """`count` power samples every `step_min` minutes from `first_minute` (+ `second` s) on."""
    execute(
        eng.cursor(),
        "INSERT INTO gpu_metrics (ts, host, metric, value) SELECT TIMESTAMPTZ '2026-11-01' + "
        "to_minutes(CAST($f + i * $s AS BIGINT)) + to_seconds($sec), 'h' || i % 3, "
        "'DCGM_FI_DEV_POWER_USAGE', i % 17 FROM range($n) t(i)",
        {"f": first_minute, "s": step_min, "n": count, "sec": second},
    ).read_all()


def _rows(eng: Engine, sql: str) -> list[tuple[object, ...]]:
    return sorted(eng.con.sql(sql).fetchall(), key=repr)


def _hour(row: tuple[object, ...]) -> datetime:
    assert isinstance(row[0], datetime)
    return row[0]


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        engine.con.execute(
            "INSERT INTO nodes (host, cluster) VALUES ('h0', 'c0'), ('h1', 'c0'), ('h2', 'c1')"
        )
        yield engine


def test_a_rule_is_refused_where_it_would_lose_derived_rows_or_cannot_apply(eng: Engine) -> None:
    cur = eng.cursor()
    execute(cur, DAILY_JOIN).read_all()
    with pytest.raises(UserError, match=r"shorter than the INTERVAL '1' DAY buckets of .* daily"):
        checked.set_rule(cur, "gpu_metrics", "6 hours")
    with pytest.raises(UserError, match="not an interval"):
        checked.set_rule(cur, "gpu_metrics", "a fortnight")
    with pytest.raises(UserError, match="longer than nothing"):
        checked.set_rule(cur, "gpu_metrics", "-1 day")
    with pytest.raises(UserError, match="needs a time table: gpu_models has no timestamp"):
        checked.set_rule(cur, "gpu_models", "1 day")
    execute(
        cur,
        "CREATE DYNAMIC TABLE per_host WITH (freshness = '1 hour') AS "
        "SELECT host, count(*) AS n FROM gpu_metrics GROUP BY ALL",
    ).read_all()
    with pytest.raises(UserError, match="per_host reads it without a time bucket key"):
        checked.set_rule(cur, "gpu_metrics", "14 days")
    execute(cur, "DROP DYNAMIC TABLE per_host").read_all()
    done = execute(cur, "ALTER TABLE gpu_metrics SET (retention = '14 days')").read_all()
    assert done["status"].to_pylist() == [
        "gpu_metrics: rows older than 14 days are dropped by the scheduler"
    ]
    for role in ("reader", "writer"):
        with pytest.raises(Refused):
            authorize(cur, "ALTER TABLE gpu_metrics SET (retention = '1 day')", role)
    execute(cur, "ALTER TABLE gpu_metrics RESET (retention)").read_all()
    assert retention.rules(cur) == []


def test_a_drop_is_not_a_change_and_full_refreshes_keep_the_dropped_range(eng: Engine) -> None:
    cur = eng.cursor()
    _insert(eng, 0, 1000)  # ~25.7 days
    install_shipped(eng)
    execute(cur, HOURLY).read_all()
    execute(cur, DAILY_JOIN).read_all()
    before = {t: _rows(eng, f"SELECT * FROM {t}") for t in ("hourly", "daily", "gpu_hourly_host")}
    changes = cur.sql("SELECT count(*) FROM wanka.table_changes").fetchall()
    checked.set_rule(cur, "gpu_metrics", "7 days")
    now = START + timedelta(days=20, hours=5, minutes=30)
    [done] = retention.apply(cur, now)
    assert done.rows > 0 and done.steps >= 13 and done.cutoff == now - timedelta(days=7)
    assert cur.sql("SELECT min(ts) >= ? FROM gpu_metrics", params=[done.cutoff]).fetchall() == [
        (True,)
    ]
    assert cur.sql("SELECT count(*) FROM wanka.table_changes").fetchall() == changes
    for table in before:
        result = execute(cur, f"REFRESH DYNAMIC TABLE {table}").read_all().to_pylist()[0]
        assert result["refresh_mode"] == "no_data", result  # the drop is not a change
        assert _rows(eng, f"SELECT * FROM {table}") == before[table]
    for table in before:
        result = execute(cur, f"REFRESH DYNAMIC TABLE {table} FULL").read_all().to_pylist()[0]
        assert "holds rows only from" in result["reason"], result
        assert _rows(eng, f"SELECT * FROM {table}") == before[table], table
        history = cur.sql(
            "SELECT refresh_mode_reason FROM wanka.refresh_history WHERE name = ? "
            "ORDER BY finished_at DESC LIMIT 1",
            params=[table],
        ).fetchall()[0][0]
        assert "recomputed from" in history


#: What the property test checks: a user's hourly rollup (a dynamic table, refreshed) and the
#: downsampling tiers (folded before each check), each with the query it must equal where raw
#: rows are held, and its bucket width.
TIERS = {
    "hourly": (
        "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, sum(value), count(*), "
        "min(value), max(value) FROM gpu_metrics GROUP BY ALL",
        timedelta(hours=1),
    ),
    "gpu_metrics_1m": (tiers.RECOMPUTE["gpu_metrics_1m"], timedelta(minutes=1)),
    "gpu_metrics_1h": (tiers.RECOMPUTE["gpu_metrics_1h"], timedelta(hours=1)),
}


def _ceil(moment: datetime, width: timedelta) -> datetime:
    """The first bucket start of `width` at or after `moment` (buckets from the epoch)."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    steps = -((epoch - moment) // width)
    return epoch + steps * width


@settings(max_examples=examples(0.15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keep_days=st.integers(1, 9),
    now_hours=st.integers(24 * 3, 24 * 14),
    later=st.integers(0, 300),
    step_min=st.sampled_from([7, 13, 37, 61]),
)
def test_each_tier_equals_the_raw_recompute_where_raw_rows_are_held_and_never_changes_before(
    warehouses: Warehouses, keep_days: int, now_hours: int, later: int, step_min: int
) -> None:
    with warehouses.engine() as eng:
        cur = eng.cursor()
        _insert(eng, 0, 14 * 24 * 60 // step_min, step_min)
        execute(cur, HOURLY).read_all()
        tiers.fold(cur)
        reference = {name: _rows(eng, f"SELECT * FROM {name}") for name in TIERS}
        checked.set_rule(cur, "gpu_metrics", f"{keep_days} days")
        now = START + timedelta(hours=now_hours)
        retention.apply(cur, now)
        # new rows, some late, some past now; 30 s off the old ones, so no series has two
        # samples at one time (where the last value would be either)
        _insert(eng, now_hours * 60 - later, 40, 11, second=30)
        # changes of held rows: the tiers rebuild the buckets they touch, and only those
        for change in (
            "DELETE FROM gpu_metrics WHERE value = 3",
            "UPDATE gpu_metrics SET value = value + 100 WHERE value = 5",
            "UPDATE gpu_metrics SET ts = ts + INTERVAL 20 SECOND WHERE value = 7",
        ):
            execute(cur, change).read_all()
        tiers.fold(cur)
        for full in (False, True, False):
            execute(cur, f"REFRESH DYNAMIC TABLE hourly{' FULL' if full else ''}").read_all()
            for name, (query, width) in TIERS.items():
                held = retention.held_from(cur, "gpu_metrics")
                assert held is not None
                boundary = _ceil(held, width)
                got = _rows(eng, f"SELECT * FROM {name}")
                kept = [r for r in got if _hour(r) < boundary]
                assert kept == [r for r in reference[name] if _hour(r) < boundary], name
                first = cur.execute(f"SELECT * FROM ({query}) LIMIT 0").description[0][0]
                recomputed = _rows(
                    eng,
                    f"SELECT * FROM ({query}) "
                    f"WHERE {first} >= TIMESTAMPTZ '{boundary.isoformat()}'",
                )
                assert [r for r in got if _hour(r) >= boundary] == recomputed, name


def test_wanka_retention_sets_lists_and_applies(tmp_path: Path) -> None:
    db = ("--db", str(tmp_path / "w.duckdb"))
    assert invoke_wanka(*db, "retention").stdout.strip() == "no retention rules: every row is kept"
    done = invoke_wanka(*db, "retention", "gpu_metrics", "3 days", "--apply")
    assert done.returncode == 0, done.stderr
    assert "rows older than 3 days" in done.stdout
    assert "gpu_metrics: dropped 0 rows before" in done.stdout
    listed = invoke_wanka(*db, "retention").stdout
    assert "gpu_metrics: keep 3 days; rows held from" in listed
    bad = invoke_wanka(*db, "retention", "nodes", "3 days")
    assert bad.returncode == 2 and "not on nodes" in bad.stderr


def test_a_step_drops_at_most_max_rows_of_samples_however_they_were_inserted(
    warehouses: Warehouses,
    eng: Engine,
) -> None:
    """DuckDB holds a DELETE's rows in memory for the triggers: steps are cut by rows too."""
    with warehouses.engine() as twin:
        for engine in (eng, twin):
            _insert(engine, 0, 3000, step_min=1)  # 3000 minutes, one insert
            for hour in range(0, 48, 6):  # then some small ones, 6 h apart, 13 samples each
                _insert(engine, hour * 60 + 7, 13, step_min=1, second=30)
            checked.set_rule(engine.cursor(), "gpu_metrics", "1 day")
        now = START + timedelta(days=3)
        [bounded] = retention.apply(eng.cursor(), now, max_rows=100)
        [whole] = retention.apply(twin.cursor(), now)
        assert bounded.rows == whole.rows > 2000
        assert whole.steps == 2 and bounded.steps >= bounded.rows / 100
        query = "SELECT ts, value FROM gpu_metrics"
        assert _rows(eng, query) == _rows(twin, query)
        assert eng.con.sql("SELECT min(ts) FROM gpu_metrics").fetchall() == [
            (now - timedelta(days=1),)
        ]
