"""Dynamic tables refreshed on a lake (here by the DuckDB engine, fast): time windows only for
appends, the whole table otherwise, every result equal to the definition run over the lake."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.warehouse.engines.conftest import rows
from warehouse.engines.duck import DuckLakeEngine
from warehouse.engines.portable import UNCARRIED, portability_problems
from warehouse.engines.refresh import refresh_lake
from warehouse.engines.window import time_window
from warehouse.kernel.engine import Engine
from warehouse.lake.export import export_lake
from warehouse.lake.layout import read_definitions
from warehouse.query.executor import execute

SERIES = frozenset({"gpu_metrics"})


def test_time_window_of_a_bucketed_group_by() -> None:
    hourly = (
        "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, count(*) AS n FROM "
        "gpu_metrics GROUP BY ALL"
    )
    window = time_window(hourly, SERIES)
    assert window is not None and (window.column, window.width_s) == ("hour", 3600)
    assert time_window("SELECT host, count(*) FROM gpu_metrics GROUP BY host", SERIES) is None
    assert time_window(hourly + " ORDER BY 1 LIMIT 3", SERIES) is None
    first, last = datetime(2026, 1, 1, 5, 59, tzinfo=UTC), datetime(2026, 1, 1, 6, tzinfo=UTC)
    lo, hi = window.bounds(first, last)
    assert (lo.hour, hi.hour) == (5, 7)
    restricted = window.restrict(hourly, lo, hi)
    assert "ts >= CAST('2026-01-01T05:00:00+00:00' AS TIMESTAMPTZ)" in restricted


HOT = (
    "CREATE DYNAMIC TABLE hot_samples WITH (freshness = '5 minutes') AS "
    "SELECT ts, host, gpu, value AS temp_c FROM gpu_metrics "
    "WHERE metric = 'DCGM_FI_DEV_GPU_TEMP' AND value > 40"
)


def add_append_table(engine: Engine) -> None:
    """A filter/projection dynamic table (the planner's 'append' shape)."""
    cur = engine.cursor()
    execute(cur, HOT).read_all()
    cur.close()


def append_telemetry(engine: Engine, hours: int) -> None:
    cur = engine.cursor()
    execute(
        cur,
        "INSERT INTO gpu_metrics (ts, host, gpu, uuid, model, metric, value) "
        f"SELECT ts + INTERVAL {hours} HOUR, host, gpu, uuid, model, metric, value + 1 "
        "FROM gpu_metrics WHERE ts < (SELECT min(ts) FROM gpu_metrics) + INTERVAL 20 MINUTE",
    ).read_all()
    cur.close()


def agree_with_definitions(lake: Path) -> None:
    reader = DuckLakeEngine()
    reader.register_lake(lake)
    reader.register_udfs()
    for d in read_definitions(lake):
        if any(UNCARRIED in p for p in portability_problems(d.query)):
            continue  # reads wanka's own tables (health_findings): refreshed in the warehouse
        assert rows(reader.sql(f'SELECT * FROM "{d.name}"')) == rows(reader.sql(d.query)), d.name


def test_appends_refresh_their_windows_and_a_rerun_does_nothing(
    warehouse: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    engine = DuckLakeEngine()
    with Engine(str(warehouse)) as db:
        add_append_table(db)
        export_lake(db, lake)
        append_telemetry(db, 3)
        export_lake(db, lake)
    done = {r.name: r for r in refresh_lake(engine, lake)}
    assert done["hot_samples"].mode == "append" and done["hot_samples"].rows > 0
    assert done["gpu_hourly_host"].mode == "window"
    assert done["xid_errors_by_model"].mode == "window"
    assert done["energy_cluster_daily"].mode == "window"
    assert done["job_gpu_hours_daily"].mode == "unchanged"  # jobs did not change
    agree_with_definitions(lake)
    again = {r.name: r.mode for r in refresh_lake(engine, lake)}
    assert again.pop("health_findings") == "skipped"  # wanka's own tables: not in the lake
    for risk in ("node_risk", "node_risk_fleet", "node_risk_settings", "gpu_risk"):
        assert again.pop(risk) == "skipped"  # its evidence is not exported to the lake
    assert set(again.values()) == {"unchanged"}


def test_a_rewritten_source_refreshes_fully_and_says_why(warehouse: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    with Engine(str(warehouse)) as db:
        export_lake(db, lake)
        cur = db.cursor()
        execute(
            cur, "DELETE FROM gpu_metrics WHERE host = (SELECT min(host) FROM gpu_metrics)"
        ).read_all()
        cur.close()
        export_lake(db, lake)
    done = {r.name: r for r in refresh_lake(DuckLakeEngine(), lake)}
    assert done["gpu_hourly_host"].mode == "full"
    assert "changed by partitions" in (done["gpu_hourly_host"].reason or "")
    agree_with_definitions(lake)
