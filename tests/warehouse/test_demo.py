"""The demo warehouse: built once, recognised when built again, rebuilt on request."""

from __future__ import annotations

from pathlib import Path

from tests.demo_clusters import TINY
from warehouse.demo import EXAMPLE_QUERIES, build_demo, built_config
from warehouse.kernel.engine import Engine
from warehouse.kernel.tables import DEMO
from warehouse.simulate import SimConfig

SIMULATED = ("sites", "clusters", "nodes", "jobs", "job_steps", "job_events", "gpu_metrics")


def test_build_loads_every_table_through_the_readers(fresh_db: Path) -> None:
    with Engine(str(fresh_db)) as eng:
        summary = build_demo(eng, TINY.config)
        assert summary.rebuilt and set(summary.rows) == set(DEMO)
        for table in SIMULATED:
            rows = summary.rows[table]
            assert eng.con.sql(f'SELECT count(*) FROM "{table}"').fetchall()[0][0] == rows > 0
        assert summary.rows["nodes"] == 8
        formats = dict(
            eng.con.sql(
                "SELECT source_format, count(*) FROM wanka.ingest_batches GROUP BY 1"
            ).fetchall()
        )
        assert formats.keys() == {"inventory", "parquet", "sacct"}
        assert summary.batches == sum(formats.values())
        # every row came in through an ingest batch
        assert eng.con.sql("SELECT count(*) FROM jobs WHERE batch_id IS NULL").fetchall() == [(0,)]
        # the Slurm jobs' last word is the sacct text, read by the sacct reader
        last = eng.con.sql(
            "SELECT b.source_format, count(*) FROM jobs j JOIN wanka.ingest_batches b "
            "USING (batch_id) GROUP BY 1 ORDER BY 1"
        ).fetchall()
        assert [f for f, _ in last] in (["parquet", "sacct"], ["sacct"])
        assert summary.samples == eng.con.sql("SELECT count(*) FROM gpu_metrics").fetchall()[0][0]
        assert built_config(eng) is not None


def test_same_demo_twice_is_not_rebuilt(fresh_db: Path) -> None:
    with Engine(str(fresh_db)) as eng:
        first = build_demo(eng, TINY.config)
        again = build_demo(eng, TINY.config)
        assert not again.rebuilt and again.rows == first.rows


def test_rebuild_replaces_instead_of_appending(fresh_db: Path) -> None:
    with Engine(str(fresh_db)) as eng:
        first = build_demo(eng, TINY.config)
        second = build_demo(eng, TINY.config, rebuild=True)
        assert second.rebuilt and second.rows == first.rows


def test_other_config_rebuilds(fresh_db: Path) -> None:
    with Engine(str(fresh_db)) as eng:
        build_demo(eng, TINY.config)
        other = SimConfig(**{**TINY.config.__dict__, "seed": 4})
        assert build_demo(eng, other).rebuilt


def test_real_samples_join_the_demo(fresh_db: Path, shared_data: Path) -> None:
    with Engine(str(fresh_db)) as eng:
        summary = build_demo(eng, TINY.config, real_data=shared_data)
        assert summary.real_samples == str(shared_data)
        assert summary.rows["pods"] == 8152
        sample_jobs = eng.con.sql(
            "SELECT count(*) FROM jobs WHERE cluster = 'aws-hpc-sample'"
        ).fetchall()[0][0]
        assert sample_jobs == 483
        captured = eng.con.sql(
            "SELECT DISTINCT model FROM gpu_metrics WHERE host NOT IN (SELECT host FROM nodes)"
        ).fetchall()
        assert {m for (m,) in captured} == {"H100", "L40S"}


def test_example_queries_run(fresh_db: Path) -> None:
    with Engine(str(fresh_db)) as eng:
        build_demo(eng, TINY.config)
        results = {title: eng.con.sql(query).fetchall() for title, query in EXAMPLE_QUERIES.items()}
        assert results["GPU-hours by job state"]
        assert results["GPU utilisation and power per cluster, last hour"]
