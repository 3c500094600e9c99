"""The simulator's `scontrol show job -d --oneliner` text and sacct's Timelimit: Slurm's view of
the jobs, which must name the GPUs the schedule really gave them."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pyarrow.csv as pacsv
import pytest

from tests.warehouses import Warehouses
from warehouse.ingest import ingest
from warehouse.ingest import scontrol_fields as sf
from warehouse.jobs import hostlist
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimulatedCluster, write_formats
from warehouse.simulate.sacct import FIELDS
from warehouse.simulate.scontrol import index_ranges, parse_index_ranges

#: (job, host, GPU index) triples.
Held = set[tuple[str, str, int]]


@pytest.fixture(scope="module")
def out(small: SimulatedCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scontrol")
    write_formats(small, folder, kinds=("slurm", "truth"))
    return folder


@pytest.fixture(scope="module")
def lines(out: Path) -> list[str]:
    return (out / "slurm" / "scontrol.txt").read_text().splitlines()


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


def _parsed(lines: list[str]) -> dict[str, sf.Job]:
    jobs = {}
    for line in lines:
        job = sf.parse_fields(line)
        job_id = sf.job_id(job)
        assert job_id is not None, line
        jobs[job_id] = job
    return jobs


def _held(jobs: dict[str, sf.Job]) -> Held:
    return {
        (job_id, host, gpu)
        for job_id, job in jobs.items()
        for group in job.groups
        for host in hostlist.expand(group["Nodes"])
        for gpu in sf.gpu_indices(group["GRES"])
    }


def test_one_line_per_slurm_job_of_the_window(small: SimulatedCluster, lines: list[str]) -> None:
    slurm = {c["cluster"] for c in small.clusters.to_pylist() if c["scheduler"] == "slurm"}
    start = small.config.start
    expected = [
        j["job_id"]
        for j in small.jobs.to_pylist()
        if j["cluster"] in slurm and j["start_at"] and (j["end_at"] is None or j["end_at"] >= start)
    ]
    assert list(_parsed(lines)) == expected and len(expected) > 20
    # scontrol's own spacing: groups set off by three spaces, a space before the newline.
    assert all(line.endswith(" ") and "   Nodes=" in line for line in lines)


def test_gres_idx_are_the_gpus_the_schedule_assigned(
    small: SimulatedCluster, lines: list[str], out: Path
) -> None:
    jobs = _parsed(lines)
    rows = {j["job_id"]: (i, j) for i, j in enumerate(small.jobs.to_pylist())}
    assigned = {
        (job_id, host, gpu)
        for job_id in jobs
        for host in rows[job_id][1]["node_list"]
        for gpu in small.gpu_slots[rows[job_id][0]]
    }
    held = _held(jobs)
    assert held == assigned
    # The truth's Slurm rows are exactly these, for the jobs that held a GPU at a scrape.
    truth = {
        (str(r["job_id"]), r["host"], r["gpu"])
        for r in pacsv.read_csv(out / "truth" / "job_gpus.csv").to_pylist()
        if "/" not in str(r["job_id"])
    }
    in_truth = {job for job, _, _ in truth}
    assert truth == {h for h in held if h[0] in in_truth} and len(in_truth) > 10
    interval = small.config.interval_s
    for job_id in set(jobs) - in_truth:  # ran only between two scrapes
        job = rows[job_id][1]
        t0 = (job["start_at"] - small.config.start).total_seconds()
        t1 = (job["end_at"] - small.config.start).total_seconds()
        assert math.ceil(max(t0, 0) / interval) >= math.ceil(t1 / interval)


def test_fields_say_what_the_jobs_table_says(small: SimulatedCluster, lines: list[str]) -> None:
    by_id = {j["job_id"]: j for j in small.jobs.to_pylist()}
    for job_id, job in _parsed(lines).items():
        row = by_id[job_id]
        assert job.text("OverSubscribe") == ("NO" if row["gpus"] % 8 == 0 else "OK")
        assert row["exclusive"] == (row["gpus"] % 8 == 0)
        assert hostlist.expand(job.fields["NodeList"]) == row["node_list"]
        assert job.fields["JobState"] == row["state"]
        assert f"gres/gpu={row['gpus']}" in job.fields["AllocTRES"]
        assert job.fields["JOB_GRES"].endswith(f":{row['gpus']}")
        start, end = (datetime.fromisoformat(job.fields[k]) for k in ("StartTime", "EndTime"))
        assert start == row["start_at"].replace(tzinfo=None)  # UTC, written without a zone
        if row["end_at"] is None:  # running: EndTime is when its time limit runs out
            assert (end - start).total_seconds() == row["time_limit_s"]
        else:
            assert end == row["end_at"].replace(tzinfo=None)
            assert row["time_limit_s"] >= row["elapsed_s"]


def test_the_scontrol_reader_reads_it_back(
    small: SimulatedCluster, lines: list[str], out: Path, eng: Engine
) -> None:
    [result] = ingest(eng, "scontrol", [str(out / "slurm" / "scontrol.txt")])
    assert result.rejected == 0 and result.rows["jobs"] == len(lines)
    found = eng.con.sql(
        "SELECT job_id, host, gpu FROM job_gpus WHERE source = 'scontrol'"
    ).fetchall()
    assert set(found) == _held(_parsed(lines))
    columns = ("job_id", "start_at", "end_at", "state", "time_limit_s", "exclusive", "gpus")
    read = eng.con.sql(f"SELECT {', '.join(columns)} FROM jobs ORDER BY job_id").fetchall()
    listed = _parsed(lines)
    ours = sorted(
        tuple(j[c] for c in columns) for j in small.jobs.to_pylist() if j["job_id"] in listed
    )
    assert read == ours


def test_sacct_carries_the_time_limit(small: SimulatedCluster, out: Path, eng: Engine) -> None:
    text = (out / "slurm" / "sacct.txt").read_text().splitlines()
    assert text[0].split("|")[-1] == "Timelimit" and FIELDS[-1] == "Timelimit"
    steps = [line.split("|") for line in text[1:] if "." in line.split("|")[0]]
    assert steps and {s[-1] for s in steps} == {""}
    [result] = ingest(eng, "sacct", [str(out / "slurm" / "sacct.txt")])
    assert result.rejected == 0
    read = dict(eng.con.sql("SELECT job_id, time_limit_s FROM jobs").fetchall())
    ours = {j["job_id"]: j["time_limit_s"] for j in small.jobs.to_pylist() if j["job_id"] in read}
    assert read == ours and len(read) > 100
    limits = set(ours.values())
    assert None not in limits and max(limits) >= 24 * 3600  # padded, often far above the run


@pytest.mark.parametrize("indices", [[0], [0, 1, 2, 3], [1, 3], [0, 1, 4, 6, 7], list(range(8))])
def test_index_ranges_round_trip(indices: list[int]) -> None:
    text = index_ranges(indices)
    assert parse_index_ranges(text) == indices == sf.indices(text)
