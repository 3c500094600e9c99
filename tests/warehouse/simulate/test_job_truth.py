"""Job labels per `job_labels` mode, and the ground truth: which job held which GPU, and what
its GPUs reported, as the written files show it."""

from __future__ import annotations

import filecmp
import json
import re
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from warehouse.simulate import InvalidConfig, SimConfig, SimulatedCluster, simulate_cluster
from warehouse.simulate import write_formats as write
from warehouse.simulate.scrape_labels import SCRAPE_KEYS

LABEL = re.compile(r'(\w+)="([^"]*)"')
#: Every cluster gets a host (one each), the Kubernetes one included; half an hour of scrapes.
TINY = SimConfig(gpus=64, hours=0.5, interval_s=60.0, seed=11, warmup_hours=12.0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[SimulatedCluster, Path]:
    cluster = simulate_cluster(TINY)
    out = tmp_path_factory.mktemp("truth")
    write(cluster, out, max_rows=20_000)
    return cluster, out


@pytest.fixture(scope="module")
def con(tiny: tuple[SimulatedCluster, Path]) -> duckdb.DuckDBPyConnection:
    """The written samples (Parquet parts) and the truth, as DuckDB views."""
    cluster, out = tiny
    db = duckdb.connect()
    db.execute(
        f"CREATE VIEW samples AS SELECT ts, host::VARCHAR AS host, gpu, metric::VARCHAR AS metric, "
        f"value, labels FROM read_parquet('{out}/parquet/gpu_metrics/*.parquet')"
    )
    db.execute(f"CREATE VIEW truth AS SELECT * FROM read_csv('{out}/truth/job_gpus.csv')")
    db.execute(f"CREATE VIEW usage AS SELECT * FROM read_csv('{out}/truth/job_usage.csv')")
    db.register("nodes", cluster.nodes.select(["host", "cluster"]))
    db.register("clusters", cluster.clusters.select(["cluster", "scheduler"]))
    return db


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """The one count a query returns."""
    [(value,)] = con.sql(sql).fetchall()
    assert isinstance(value, int)
    return value


def test_job_labels_is_checked() -> None:
    with pytest.raises(InvalidConfig, match="job_labels must be one of hpc, kubernetes, none"):
        SimConfig(job_labels="slurm")
    assert SimConfig().job_labels == "hpc"


def test_hpc_mode_names_the_slurm_job_holding_each_gpu(con: duckdb.DuckDBPyConnection) -> None:
    held = (
        "SELECT s.*, t.job_id, c.scheduler FROM samples s JOIN nodes n USING (host) "
        "JOIN clusters c USING (cluster) LEFT JOIN truth t ON t.host = s.host AND t.gpu = s.gpu "
        "AND s.ts >= t.start_at AND s.ts < t.end_at"
    )
    con.execute(f"CREATE TEMP VIEW held AS {held}")
    # Every sample of a GPU a Slurm job holds carries hpc_job, naming that job, and no other.
    slurm = "FROM held WHERE scheduler = 'slurm' AND job_id IS NOT NULL"
    assert _one(con, f"SELECT count(*) {slurm}") > 1000
    assert _one(con, f"SELECT count(*) {slurm} AND labels->>'hpc_job' IS DISTINCT FROM job_id") == 0
    assert _one(con, f"SELECT count(DISTINCT json_keys(labels::JSON)) {slurm}") == 1
    # An idle GPU's samples name no job, only their scrape; a pod's GPUs carry pod labels,
    # never hpc_job.
    idle = "FROM held WHERE job_id IS NULL"
    assert _one(con, f"SELECT count(*) {idle}") > 0
    keys = "list_sort(json_keys(labels::JSON))"
    assert con.sql(f"SELECT DISTINCT {keys} {idle}").fetchall() == [(sorted(SCRAPE_KEYS),)]
    pods = "FROM held WHERE scheduler = 'kubernetes' AND job_id IS NOT NULL"
    assert _one(con, f"SELECT count(*) {pods}") > 0
    wrong = "labels->>'namespace' || '/' || (labels->>'pod') IS DISTINCT FROM job_id"
    assert _one(con, f"SELECT count(*) {pods} AND ({wrong} OR labels->>'hpc_job' IS NOT NULL)") == 0
    # Each GPU is held by one job at a time: no sample joins two intervals.
    assert _one(con, "SELECT count(*) - count(DISTINCT (ts, host, gpu, metric)) FROM held") == 0


def test_hpc_job_reaches_the_dcgm_text(tiny: tuple[SimulatedCluster, Path]) -> None:
    _, out = tiny
    # (host, gpu, ms) -> the hpc_job of its utilisation sample in the text, None without one.
    named: dict[tuple[str, int, int], str | None] = {}
    for path in sorted((out / "dcgm").glob("*.prom")):
        for line in path.read_text().splitlines():
            if line.startswith("DCGM_FI_DEV_GPU_UTIL{"):
                labels = dict(LABEL.findall(line))
                key = (labels["Hostname"], int(labels["gpu"]), int(line.rsplit(" ", 1)[1]))
                named[key] = labels.get("hpc_job")
    expected: dict[tuple[str, int, int], str | None] = dict.fromkeys(named)
    for row in pacsv.read_csv(out / "truth" / "job_gpus.csv").to_pylist():
        job = str(row["job_id"])
        lo, hi = (round(row[k].timestamp() * 1000) for k in ("start_at", "end_at"))
        for key in named:
            if key[:2] == (row["host"], row["gpu"]) and lo <= key[2] < hi and "/" not in job:
                expected[key] = job
    assert named == expected and sum(v is not None for v in named.values()) > 1000
    assert json.loads((out / "manifest.json").read_text())["job_labels"] == {
        "mode": "hpc",
        "keys": {"slurm": ["hpc_job"], "kubernetes": ["container", "namespace", "pod"]},
    }


@pytest.mark.parametrize("mode", ["kubernetes", "none"])
def test_other_modes_change_only_the_labels(
    tiny: tuple[SimulatedCluster, Path], mode: str, tmp_path: Path
) -> None:
    cluster, _ = tiny
    other = simulate_cluster(replace(TINY, job_labels=mode))
    ours = pa.Table.from_batches(list(cluster.telemetry_batches()))
    theirs = pa.Table.from_batches(list(other.telemetry_batches()))
    assert theirs.drop_columns(["labels"]).equals(ours.drop_columns(["labels"]))
    keys = {frozenset(json.loads(t)) - SCRAPE_KEYS for t in theirs["labels"].to_pylist()}
    pod = frozenset({"container", "namespace", "pod"})
    assert keys == ({frozenset()} if mode == "none" else {frozenset(), pod})
    files = write(other, tmp_path, kinds=("dcgm",))
    text = "".join(p.read_text() for p in files["dcgm"])
    assert "hpc_job=" not in text and ("pod=" in text) == (mode == "kubernetes")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["job_labels"]["mode"] == manifest["config"]["job_labels"] == mode


def test_truth_usage_is_the_mean_of_the_written_samples(con: duckdb.DuckDBPyConnection) -> None:
    recomputed = con.sql(
        "SELECT t.job_id, count(DISTINCT (s.host, s.gpu)) AS gpus, "
        "count(*) FILTER (WHERE s.metric = 'DCGM_FI_DEV_GPU_UTIL') AS samples, "
        "avg(s.value) FILTER (WHERE s.metric = 'DCGM_FI_DEV_GPU_UTIL') AS util_pct, "
        "avg(s.value) FILTER (WHERE s.metric = 'DCGM_FI_DEV_POWER_USAGE') AS power_w "
        "FROM samples s JOIN truth t ON t.host = s.host AND t.gpu = s.gpu "
        "AND s.ts >= t.start_at AND s.ts < t.end_at GROUP BY 1 ORDER BY 1"
    ).fetchall()
    truth = con.sql(
        "SELECT job_id::VARCHAR, gpus, samples, util_pct, power_w FROM usage ORDER BY 1"
    ).fetchall()
    assert len(truth) == len(recomputed) > 10
    for ours, theirs in zip(truth, recomputed, strict=True):
        assert ours[:4] == theirs[:4]  # utilisation is integral: the mean is exact
        assert ours[4] == pytest.approx(theirs[4], rel=1e-12)


def test_truth_intervals_are_whole_scrapes(
    tiny: tuple[SimulatedCluster, Path], con: duckdb.DuckDBPyConnection
) -> None:
    cluster, out = tiny
    rows = pacsv.read_csv(out / "truth" / "job_gpus.csv").to_pylist()
    assert rows and all(r["start_at"] < r["end_at"] for r in rows)
    start_us = TINY.start_us
    for r in rows:
        first = round(r["start_at"].timestamp() * 1e6) - start_us
        last = round(r["end_at"].timestamp() * 1e6) - start_us - 1000
        assert first % TINY.interval_us == 0 and last % TINY.interval_us == 0
    # A GPU's intervals never overlap, and each names a job of the jobs table.
    overlaps = _one(
        con,
        "SELECT count(*) FROM truth a JOIN truth b ON a.host = b.host AND a.gpu = b.gpu "
        "AND a.job_id <> b.job_id AND a.start_at < b.end_at AND b.start_at < a.end_at",
    )
    assert overlaps == 0
    known = {j["job_id"] for j in cluster.jobs.to_pylist()}
    assert {str(r["job_id"]).rpartition("/")[2] for r in rows} <= known


def test_same_config_same_bytes(tiny: tuple[SimulatedCluster, Path], tmp_path: Path) -> None:
    _, out = tiny
    again = tmp_path / "again"
    write(simulate_cluster(TINY), again, max_rows=20_000)
    ours = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert ours == theirs
    differ = [p for p in ours if not filecmp.cmp(out / p, again / p, shallow=False)]
    assert differ == []
