"""`wanka export --lake`, `wanka sql --lake`, and the refusals of `--engine spark` that come
before any Spark session starts."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import invoke_wanka, run_wanka


def test_export_then_query_the_lake_with_duckdb(tmp_path: Path) -> None:
    db, lake = str(tmp_path / "w.duckdb"), str(tmp_path / "lake")
    assert invoke_wanka("--db", db, "sql", "SELECT 1").returncode == 0
    exported = invoke_wanka("--db", db, "export", "--lake", lake)
    assert exported.returncode == 0, exported.stderr
    assert "gpu_metrics: create, 0 rows" in exported.stdout
    assert "gpu_models: create" in exported.stdout
    again = invoke_wanka("--db", db, "export", "--lake", lake)
    assert "gpu_metrics: unchanged" in again.stdout
    query = "SELECT count(*) AS n, min(pcie_gbs(4, 16)) AS g FROM gpu_models"
    result = invoke_wanka("sql", "--lake", lake, query, "--format", "csv")
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()[:2]
    assert header == "n,g" and int(row.split(",")[0]) >= 7


def test_spark_refuses_what_it_would_run_differently_before_starting(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    result = run_wanka(
        "sql", "--engine", "spark", "--lake", str(lake), "SELECT histogram(gpu) FROM gpu_metrics"
    )
    assert result.returncode == 2
    assert "histogram(x) has no Spark equivalent" in result.stderr
    assert "log4j" not in result.stderr  # no JVM was started


def test_an_engine_other_than_duckdb_needs_a_lake(tmp_path: Path) -> None:
    result = invoke_wanka("refresh", "--engine", "spark")
    assert result.returncode == 2
    assert "--lake DIR" in result.stderr
