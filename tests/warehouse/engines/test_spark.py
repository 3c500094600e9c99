"""Spark runs wanka's catalog as DuckDB does: every shipped dynamic table and analysis that is
portable gives the same rows, the model functions the same numbers and errors, and a refresh on
Spark (time windows over appends) equals the definition. One local Spark session per run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.udfs.test_calibration import FIGURES
from tests.warehouse.engines.conftest import rows
from tests.warehouse.engines.test_lake_refresh import add_append_table
from warehouse.analyses import all_analyses
from warehouse.analyses.params import bind
from warehouse.engines.duck import DuckLakeEngine
from warehouse.engines.portable import portability_problems
from warehouse.engines.refresh import refresh_lake
from warehouse.engines.spark import SparkEngine
from warehouse.kernel.engine import Engine
from warehouse.lake.export import export_lake
from warehouse.lake.layout import read_definitions
from warehouse.query.executor import execute

# one worker runs them all: one Spark session per run, not one per xdist worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]

#: Analyses known not to run the same on Spark, with the construct that keeps them DuckDB-only.
DUCKDB_ONLY = {
    "checkpoint_cost": "unnest",
    "fragmentation": "len(x)",
    "gpu_allocation": "to_microseconds",
    "gpu_efficiency": "wanka.efficiency_rules",
    "idle_gpu_jobs": "wanka.efficiency_rules",
    "stragglers": "job_gpus is a view",
    "step_time_changes": "job_gpus is a view",
    # node_faults is in the lake; the fleet's rate (fleet_fault_rate) reads wanka's own tables
    **{
        name: "which the lake does not carry"
        for name in (
            "fault_rates",
            "fault_repeat",
            "fault_weibull",
            "checkpoint_advice",
        )
    },
    "interruption_text_accuracy": "AI functions",
    "interruption_text_causes": "AI functions",
    "text_search": "AI functions",
}
#: Shipped dynamic tables the lake marks as DuckDB's alone, and a word of why: the health rules
#: read their thresholds and the newest batch from wanka's own tables, the risk score its
#: evidence and settings, which the lake export does not write.
DUCKDB_ONLY_TABLES = {
    name: "which the lake does not carry"
    for name in (
        "health_findings",
        "node_risk",
        "node_risk_fleet",
        "node_risk_settings",
        "gpu_risk",
    )
}


@pytest.fixture(scope="module")
def lake(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("spark_lake")
    with Engine(str(demo_db), read_only=True) as engine:
        export_lake(engine, folder / "lake")
    return folder / "lake"


@pytest.fixture(scope="module")
def engines(lake: Path, spark: Any) -> tuple[DuckLakeEngine, SparkEngine]:
    duck, spark_engine = DuckLakeEngine(), SparkEngine(spark)
    for engine in (duck, spark_engine):
        engine.register_lake(lake)
        engine.register_udfs()
    return duck, spark_engine


def test_every_shipped_dynamic_table_agrees(
    lake: Path, engines: tuple[DuckLakeEngine, SparkEngine]
) -> None:
    duck, spark = engines
    definitions = read_definitions(lake)
    assert len(definitions) >= 4
    for d in definitions:
        if d.name in DUCKDB_ONLY_TABLES:
            assert not d.spark_portable and DUCKDB_ONLY_TABLES[d.name] in (d.spark_reason or "")
            continue
        assert d.spark_portable, (d.name, d.spark_reason)
        expected = rows(duck.sql(d.query))
        assert expected, d.name
        assert rows(spark.sql(d.query)) == expected, d.name


def test_every_portable_analysis_agrees(engines: tuple[DuckLakeEngine, SparkEngine]) -> None:
    duck, spark = engines
    compared = []
    for name, analysis in sorted(all_analyses().items()):
        values: dict[str, object] = dict(bind(analysis.params, {}, name))
        problems = portability_problems(analysis.sql, values)
        if name in DUCKDB_ONLY:
            assert any(DUCKDB_ONLY[name] in p for p in problems), (name, problems)
            continue
        assert not problems, (name, problems)
        assert rows(spark.sql(analysis.sql, values)) == rows(duck.sql(analysis.sql, values)), name
        compared.append(name)
    assert len(compared) >= 10


def _sql(expression: str) -> str:
    return expression.replace("inf", "'inf'::DOUBLE")


def test_model_functions_agree_on_the_calibration_figures(
    engines: tuple[DuckLakeEngine, SparkEngine],
) -> None:
    duck, spark = engines
    columns = ", ".join(f"{_sql(e)} AS c{i}" for i, (_, e, _, _) in enumerate(FIGURES))
    ours = duck.sql(f"SELECT {columns}").to_pylist()[0]
    theirs = spark.sql(f"SELECT {columns}").to_pylist()[0]
    for i, (what, _, low, high) in enumerate(FIGURES):
        a, b = ours[f"c{i}"], theirs[f"c{i}"]
        assert a == b or math.isclose(a, b, rel_tol=1e-12), what
        assert low <= b <= high, what


def test_model_functions_null_and_domain_errors_on_spark(
    engines: tuple[DuckLakeEngine, SparkEngine],
) -> None:
    _, spark = engines
    got = spark.sql("SELECT pcie_gbs(NULL, 16) AS a, nic_gbs(CAST(NULL AS DOUBLE)) AS b")
    assert got.to_pylist() == [{"a": None, "b": None}]
    with pytest.raises(Exception, match=r"pcie_gbs: gen must be"):
        spark.sql("SELECT pcie_gbs(9, 16) AS a")
    with pytest.raises(Exception, match=r"pcie_gbs: gen must be an integer"):
        spark.sql("SELECT pcie_gbs(4.5, 16) AS a")  # not truncated to 4 on the way in


def test_refresh_on_spark_is_incremental_and_equals_the_definition(
    warehouse: Path, tmp_path: Path, spark: Any
) -> None:
    lake = tmp_path / "lake"
    with Engine(str(warehouse)) as db:
        add_append_table(db)
        export_lake(db, lake)
        cur = db.cursor()
        execute(
            cur,
            "INSERT INTO gpu_metrics (ts, host, gpu, uuid, model, metric, value) "
            "SELECT ts + INTERVAL 2 HOUR, host, gpu, uuid, model, metric, value * 1.5 "
            "FROM gpu_metrics WHERE ts < (SELECT min(ts) FROM gpu_metrics) + INTERVAL 10 MINUTE",
        ).read_all()
        cur.close()
        export_lake(db, lake)
    done = {r.name: r for r in refresh_lake(SparkEngine(spark), lake)}
    assert {done[n].mode for n in ("gpu_hourly_host", "xid_errors_by_model")} == {"window"}
    assert done["hot_samples"].mode == "append"  # files written by Spark's tasks, one commit
    assert done["hot_samples"].rows > 0
    reader = DuckLakeEngine()
    reader.register_lake(lake)
    for d in read_definitions(lake):
        if d.name in DUCKDB_ONLY_TABLES:
            continue  # reads wanka's own tables: refreshed in the warehouse, skipped here
        assert rows(reader.sql(f'SELECT * FROM "{d.name}"')) == rows(reader.sql(d.query)), d.name
    again = {r.name: r.mode for r in refresh_lake(SparkEngine(spark), lake)}
    assert {again.pop(n) for n in DUCKDB_ONLY_TABLES} == {"skipped"}
    assert set(again.values()) == {"unchanged"}
