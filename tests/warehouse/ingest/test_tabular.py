"""inventory, csv and parquet: bulk loads checked against the target table's DDL."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from warehouse.errors import UserError
from warehouse.ingest import ReadOptions, ingest
from warehouse.kernel.engine import Engine


def test_alibaba_node_list_with_its_own_column_names(eng: Engine, shared_data: Path) -> None:
    """The real 1,213-node Alibaba list: sn/gpu/model and milli-CPU/MiB columns map onto nodes."""
    path = shared_data / "alibaba" / "openb_node_list_gpu_node.csv"
    [result] = ingest(eng, "inventory", [str(path)], ReadOptions(cluster="openb"))
    # 1,214 lines = header + 1,213 nodes (wc -l), every one readable
    assert result.rows == {"nodes": 1213} and result.rejected == 0
    first = eng.con.sql(
        "SELECT host, gpus, gpu_model, cpu_cores, memory_gb FROM nodes "
        "WHERE host = 'openb-node-0000'"
    ).fetchall()
    assert first == [("openb-node-0000", 2, "P100", 64, 256.0)]
    models = dict(eng.con.sql("SELECT gpu_model, count(*) FROM nodes GROUP BY 1").fetchall())
    assert sum(models.values()) == 1213 and {"P100", "T4", "V100M32"} <= set(models)


def test_inventory_loads_sites_and_clusters_too(eng: Engine, tmp_path: Path) -> None:
    sites = tmp_path / "sites.csv"
    sites.write_text("site,region,pue,price_per_kwh\nbj,cn-north,1.25,0.6\nsh,cn-east,bad,0.7\n")
    [result] = ingest(eng, "inventory", [str(sites)], ReadOptions(table="sites"))
    assert result.rows == {"sites": 1} and result.rejected == 1
    assert eng.con.sql("SELECT site, pue FROM sites").fetchall() == [("bj", 1.25)]
    with pytest.raises(UserError, match="inventory loads one of"):
        ingest(eng, "inventory", [str(sites)], ReadOptions(table="jobs"))


def test_csv_into_a_named_table_checks_every_type(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "events.csv"
    path.write_text(
        "job_id,ts,event,host,gpu,value\n"
        "1,2026-11-01T00:00:00Z,checkpoint,h1,0,31.5\n"
        "2,yesterday,checkpoint,h1,0,1\n"
        "3,2026-11-01 01:00:00+08,xid_failure,h2,seven,79\n"
        '4,2026-11-01T02:00:00Z,"restart, after 79",h2,,\n'
    )
    [result] = ingest(eng, "csv", [str(path)], ReadOptions(table="job_events"))
    assert result.rows == {"job_events": 2} and result.rejected == 2
    rejects = eng.con.sql("SELECT line, field FROM wanka.ingest_rejects ORDER BY line").fetchall()
    assert rejects == [(3, "ts"), (4, "gpu")]
    kept = eng.con.sql(
        "SELECT job_id, event, gpu, value FROM job_events ORDER BY job_id"
    ).fetchall()
    assert kept == [("1", "checkpoint", 0, 31.5), ("4", "restart, after 79", None, None)]


def test_csv_with_unknown_columns_is_refused_whole(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("job_id,when\n1,now\n")
    with pytest.raises(UserError, match=r"columns when are not in table job_events"):
        ingest(eng, "csv", [str(path)], ReadOptions(table="job_events"))


def test_parquet_bulk_load(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "m.parquet"
    table = pa.table(
        {
            "ts": pa.array([0, 60_000_000], pa.timestamp("us", tz="UTC")),
            "host": ["h1", "h1"],
            "gpu": pa.array([0, 1], pa.int64()),  # wider than the DDL's INTEGER: cast on load
            "metric": ["DCGM_FI_DEV_GPU_UTIL"] * 2,
            "value": [99.0, 12.5],
        }
    )
    pq.write_table(table, path)
    [result] = ingest(eng, "parquet", [str(path)], ReadOptions(table="gpu_metrics"))
    assert result.rows == {"gpu_metrics": 2}
    assert eng.con.sql("SELECT sum(value), max(gpu) FROM gpu_metrics").fetchall() == [(111.5, 1)]


def test_parquet_that_does_not_fit_is_refused_whole(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({"ts": ["not a time"], "host": ["h"], "metric": ["m"]}), path)
    with pytest.raises(UserError, match="do not fit table gpu_metrics"):
        ingest(eng, "parquet", [str(path)], ReadOptions(table="gpu_metrics"))
    assert eng.con.sql("SELECT count(*) FROM gpu_metrics").fetchall() == [(0,)]
