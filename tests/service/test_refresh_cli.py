"""`wanka refresh` after `wanka ingest`, as a new user runs them: a manual refresh brings the
per-job tables up to the telemetry at once, the tables they read first (it used to answer "no
dynamic table is due", and `wanka refresh job_gpu_usage` answered no_data, until the tables'
freshness passed)."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest

from tests.conftest import invoke_wanka
from tests.warehouses import Warehouses

#: job_gpu_usage and what it reads, in dependency order
CHAIN = ["job_gpu_usage_daily", "job_gpu_usage_by_gpu", "job_gpu_usage"]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """32 GPUs, half an hour of one-minute scrapes, in the files `wanka ingest` reads."""
    out = tmp_path_factory.mktemp("sim")
    done = invoke_wanka(
        "simulate", "--gpus", "32", "--hours", "0.5", "--seed", "4", "--faults", "0",
        "--start", "2026-11-01T00:00:00Z", "--warmup-hours", "6", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def ingested(simulated: Path, db_path: Path, warehouses: Warehouses) -> Path:
    """A warehouse whose shipped tables were refreshed before the ingests, never after."""
    warehouses.empty(db_path, shipped=True)
    for fmt, path in (
        ("inventory", "inventory/nodes.csv"),
        ("sacct", "slurm/sacct.txt"),
        ("dcgm", "dcgm/metrics-0000.prom"),
    ):
        done = invoke_wanka("--db", str(db_path), "ingest", fmt, str(simulated / path))
        assert done.returncode == 0, done.stderr
    return db_path


def truth(simulated: Path) -> set[tuple[str, int, float]]:
    """(job, GPUs, mean utilisation) of every job with telemetry, as the simulator drew it."""
    with open(simulated / "truth/job_usage.csv", newline="") as f:
        return {
            (r["job_id"], int(r["gpus"]), round(float(r["util_pct"]), 6)) for r in csv.DictReader(f)
        }


def usage(db: Path) -> set[tuple[str, int, float]]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT job_id, gpus_seen, util_pct FROM job_gpu_usage").fetchall()
    return {(job, gpus, round(util, 6)) for job, gpus, util in rows}


def outcomes(stdout: str) -> dict[str, str]:
    """Table name -> its line of `wanka refresh`, in the order printed."""
    return {line.split(":")[0]: line for line in stdout.splitlines()}


def test_refresh_after_an_ingest_fills_the_per_job_tables_in_one_call(
    simulated: Path, ingested: Path
) -> None:
    assert usage(ingested) == set()
    done = invoke_wanka("--db", str(ingested), "refresh")
    assert done.returncode == 0, done.stderr
    lines = outcomes(done.stdout)
    assert [n for n in lines if n in CHAIN] == CHAIN  # upstream first
    assert all("no_data" not in lines[n] for n in CHAIN)
    expected = truth(simulated)
    assert len(expected) > 5 and usage(ingested) == expected
    again = invoke_wanka("--db", str(ingested), "refresh")
    assert again.stdout.strip() == (
        "nothing to refresh: no dynamic table is due or has changed sources"
    )


def test_refresh_of_a_downstream_table_refreshes_what_it_reads_first(
    simulated: Path, ingested: Path
) -> None:
    done = invoke_wanka("--db", str(ingested), "refresh", "job_gpu_usage")
    assert done.returncode == 0, done.stderr
    lines = outcomes(done.stdout)
    assert list(lines) == CHAIN
    jobs = len(truth(simulated))
    assert lines["job_gpu_usage"].startswith(f"job_gpu_usage: incremental, {jobs} rows inserted")
    assert usage(ingested) == truth(simulated)


def test_refresh_signals_sees_what_sql_dml_wrote(db_path: Path, warehouses: Warehouses) -> None:
    """A fault written by SQL INSERT is node_risk's evidence after `wanka refresh --signals`,
    and a fault deleted by SQL is no longer."""
    warehouses.empty(db_path, shipped=True)
    db = ["--db", str(db_path)]
    written = invoke_wanka(*db, "sql", "INSERT INTO node_faults (node, start_at, class, source) "
                           "VALUES ('n1', '2024-05-01 00:00:00+00', 'GPU', 'csv'), "
                           "('n2', '2024-05-02 00:00:00+00', 'NIC', 'csv')")  # fmt: skip
    assert written.returncode == 0, written.stderr
    plain = invoke_wanka(*db, "refresh", "node_risk")
    assert plain.returncode == 0, plain.stderr

    def nodes() -> list[str]:
        with duckdb.connect(str(db_path), read_only=True) as con:
            return [r[0] for r in con.execute("SELECT node FROM node_risk ORDER BY 1").fetchall()]

    assert nodes() == []  # SQL DML is not seen by the ingests' derivation
    done = invoke_wanka(*db, "refresh", "--signals", "node_risk")
    assert done.returncode == 0, done.stderr
    assert (
        "node_signals: derived again from node_faults, jobs and gpu_events: 2 rows" in done.stdout
    )
    assert nodes() == ["n1", "n2"]
    deleted = invoke_wanka(*db, "sql", "DELETE FROM node_faults WHERE node = 'n2'")
    assert deleted.returncode == 0, deleted.stderr
    again = invoke_wanka(*db, "refresh", "--signals", "node_risk")
    assert again.returncode == 0, again.stderr
    assert nodes() == ["n1"]
