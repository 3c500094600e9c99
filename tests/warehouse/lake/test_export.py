"""wanka export: Delta tables equal to the warehouse, incremental, atomic, read by active files."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.warehouse.faults.test_node_risk import faults_csv, shipped
from tests.warehouses import Warehouses
from warehouse.engines.duck import DuckLakeEngine
from warehouse.health import risk
from warehouse.ingest import ingest
from warehouse.kernel.engine import Engine
from warehouse.lake import export as export_module
from warehouse.lake.delta import LakeTable
from warehouse.lake.export import Exported, export_lake
from warehouse.lake.layout import read_definitions
from warehouse.query.executor import execute


def ops(results: list[Exported]) -> dict[str, str]:
    return {r.table: r.operation for r in results}


def same_as_warehouse(engine: Engine, lake: Path, tables: list[str]) -> None:
    """Each lake table (read through its Delta log) holds exactly the warehouse's rows."""
    reader = DuckLakeEngine()
    reader.register_lake(lake)
    cur = engine.cursor()
    for table in tables:
        columns = [
            r[0]
            for r in cur.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = "
                "current_database() AND schema_name = 'main' AND table_name = ? "
                "AND data_type <> 'JSON'",
                [table],
            ).fetchall()
        ]
        listed = ", ".join(f'"{c}"' for c in columns)
        ours = sorted(cur.execute(f"SELECT {listed} FROM main.{table}").fetchall(), key=repr)
        theirs = sorted(reader.sql(f"SELECT {listed} FROM {table}").to_pylist(), key=repr)
        assert [tuple(r.values()) for r in theirs] == ours, table
    cur.close()


def test_first_export_creates_every_table_and_a_rerun_writes_nothing(
    warehouse: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    with Engine(str(warehouse)) as engine:
        first = export_lake(engine, lake)
        assert {"gpu_metrics", "jobs", "nodes", "gpu_models", "gpu_hourly_host"} <= set(ops(first))
        assert set(ops(first).values()) <= {"create", "overwrite"}
        assert set(ops(export_lake(engine, lake)).values()) == {"unchanged"}
        same_as_warehouse(engine, lake, ["gpu_metrics", "jobs", "nodes", "job_steps"])
    metrics = LakeTable(lake / "gpu_metrics")
    assert metrics.partition_columns() == ["ts_day"]
    assert metrics.open().metadata().configuration["delta.enableDeletionVectors"] == "false"
    assert {d.name for d in read_definitions(lake)} >= {"gpu_hourly_host", "xid_errors_by_model"}


def test_new_batches_are_appended_and_changes_merged_or_rewritten(
    warehouse: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    with Engine(str(warehouse)) as engine:
        export_lake(engine, lake)
        before = LakeTable(lake / "gpu_metrics").watermark()
        cur = engine.cursor()
        execute(
            cur,
            "INSERT INTO gpu_metrics (ts, host, gpu, uuid, model, metric, value) "
            "SELECT ts + INTERVAL 1 DAY, host, gpu, uuid, model, metric, value "
            "FROM gpu_metrics LIMIT 50",
        ).read_all()
        cur.execute(
            "UPDATE jobs SET account = 'moved' WHERE job_id IN "
            "(SELECT job_id FROM jobs ORDER BY job_id LIMIT 3)"
        )
        cur.execute("DELETE FROM jobs WHERE job_id = (SELECT max(job_id) FROM jobs)")
        result = ops(export_lake(engine, lake))
        assert result["gpu_metrics"] == "append"
        assert result["jobs"] == "merge"  # a dynamic table reads jobs: old rows are logged
        assert result["nodes"] == "unchanged"
        assert LakeTable(lake / "gpu_metrics").watermark() > before
        # a delete of telemetry rewrites only the days it touched
        execute(
            cur, "DELETE FROM gpu_metrics WHERE ts >= TIMESTAMPTZ '2026-11-02 00:00:00+00'"
        ).read_all()
        again = export_lake(engine, lake)
        assert ops(again)["gpu_metrics"] == "partitions"
        same_as_warehouse(engine, lake, ["gpu_metrics", "jobs"])
        cur.close()
    # the folder still holds the replaced files: only the Delta log tells which are live
    jobs = LakeTable(lake / "jobs")
    on_disk = list((lake / "jobs").glob("*.parquet"))
    assert len(on_disk) > len(jobs.files())
    glob_rows = duckdb.sql(f"SELECT count(*) FROM read_parquet('{lake}/jobs/*.parquet')")
    assert glob_rows is not None
    assert glob_rows.fetchall()[0][0] > jobs.open().to_pyarrow_table().num_rows


def test_changes_to_an_unlogged_table_rewrite_it_and_say_why(
    warehouse: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    with Engine(str(warehouse)) as engine:
        export_lake(engine, lake)
        cur = engine.cursor()
        cur.execute("DELETE FROM job_events WHERE true")  # no dynamic table reads job_events
        done = {r.table: r for r in export_lake(engine, lake)}
        assert done["job_events"].operation == "overwrite"
        assert "not logged" in (done["job_events"].reason or "")
        same_as_warehouse(engine, lake, ["job_events"])
        cur.close()


def test_an_export_killed_half_way_reruns_cleanly(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    with Engine(str(warehouse)) as engine:
        export_lake(engine, lake)
        cur = engine.cursor()
        execute(
            cur,
            "INSERT INTO gpu_metrics (ts, host, gpu, uuid, model, metric, value) "
            "SELECT ts + INTERVAL 2 HOUR, host, gpu, uuid, model, metric, value "
            "FROM gpu_metrics LIMIT 40",
        ).read_all()
        cur.execute("UPDATE nodes SET rack = 'r9' WHERE host = (SELECT min(host) FROM nodes)")
        real = export_module._export_base

        def dies_on_nodes(cur_: duckdb.DuckDBPyConnection, lake_: Path, table: str) -> Exported:
            if table == "nodes":
                raise KeyboardInterrupt  # the process dies between two tables' commits
            return real(cur_, lake_, table)

        monkeypatch.setattr(export_module, "_export_base", dies_on_nodes)
        with pytest.raises(KeyboardInterrupt):
            export_lake(engine, lake)
        monkeypatch.setattr(export_module, "_export_base", real)
        rerun = ops(export_lake(engine, lake))
        assert rerun["gpu_metrics"] == "unchanged"  # committed before the kill, with its mark
        assert rerun["nodes"] == "merge"
        same_as_warehouse(engine, lake, ["gpu_metrics", "nodes"])
        cur.close()


def test_fault_history_and_risk_reach_the_lake(warehouses: Warehouses, tmp_path: Path) -> None:
    """node_faults is exported as the other base tables are (appended batch by batch), and the
    risk tables node_risk and gpu_risk as DuckDB last refreshed them."""
    lake = tmp_path / "lake"
    with shipped(warehouses) as engine:
        ingest(
            engine, "faults", [faults_csv(tmp_path, "a.csv", [("n1", 1, "GPU"), ("n2", 3, "NIC")])]
        )
        cur = engine.cursor()
        risk.refresh(cur)
        first = ops(export_lake(engine, lake))
        assert (first["node_faults"], first["node_risk"], first["gpu_risk"]) == (
            "create", "overwrite", "overwrite"
        )  # fmt: skip
        ingest(engine, "faults", [faults_csv(tmp_path, "b.csv", [("n1", 9, "GPU")])])
        risk.refresh(cur)
        cur.close()
        again = ops(export_lake(engine, lake))
        assert (again["node_faults"], again["node_risk"]) == ("append", "overwrite")
        same_as_warehouse(engine, lake, ["node_faults", "node_risk"])
