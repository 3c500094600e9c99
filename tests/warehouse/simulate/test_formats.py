"""The files a simulation writes read back as the formats they claim to be."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import TypedDict

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from warehouse.jobs import hostlist
from warehouse.simulate import SimulatedCluster, write_formats
from warehouse.simulate.metrics import METRICS
from warehouse.simulate.sacct import FIELDS
from warehouse.simulate.tables import ddl_schema

SAMPLE = re.compile(r"^(?P<name>[A-Z_]+)\{(?P<labels>[^}]*)\} (?P<value>\S+) (?P<ms>\d+)$")
LABEL = re.compile(r'(\w+)="([^"]*)"')


class Written(TypedDict):
    """One simulation written out: the folder, the files by kind, the progress reported."""

    out: Path
    files: dict[str, list[Path]]
    progress: list[int]


@pytest.fixture(scope="module")
def written(small: SimulatedCluster, tmp_path_factory: pytest.TempPathFactory) -> Written:
    out = tmp_path_factory.mktemp("sim")
    seen: list[int] = []
    files = write_formats(small, out, progress=seen.append, max_rows=100_000)
    return {"out": out, "files": files, "progress": seen}


def test_files_by_kind_exist(written: Written) -> None:
    files = written["files"]
    assert set(files) == {"inventory", "dcgm", "slurm", "scontrol", "parquet", "truth", "manifest"}
    assert all(p.is_file() for paths in files.values() for p in paths)
    assert len(files["dcgm"]) > 1  # 100,000 rows a batch: several scrape files


def test_progress_counts_samples_up_to_the_total(small: SimulatedCluster, written: Written) -> None:
    seen = written["progress"]
    assert seen == sorted(seen) and seen[-1] == small.sample_count


def test_prom_files_are_exposition_text_with_every_sample(
    small: SimulatedCluster, written: Written
) -> None:
    kinds = {m.name: m.kind for m in METRICS}
    samples = 0
    per_metric: Counter[str] = Counter()
    pods_on: set[str] = set()
    window_ms = (small.config.start_us // 1000, small.config.start_us // 1000 + 3_600_000)
    for path in written["files"]["dcgm"]:
        helps: Counter[str] = Counter()
        current = None
        for line in path.read_text().splitlines():
            if line.startswith("# HELP "):
                current = line.split()[2]
                helps[current] += 1
            elif line.startswith("# TYPE "):
                _, _, name, kind = line.split()
                assert name == current and kind == kinds[name]
            else:
                match = SAMPLE.match(line)
                assert match, line
                assert match["name"] == current  # a family's samples follow its header
                labels = dict(LABEL.findall(match["labels"]))
                assert {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
                        "DCGM_FI_DRIVER_VERSION"} <= set(labels)  # fmt: skip
                if "pod" in labels:
                    assert {"container", "namespace"} <= set(labels)
                    pods_on.add(labels["Hostname"])
                float(match["value"])
                assert window_ms[0] <= int(match["ms"]) < window_ms[1]
                per_metric[match["name"]] += 1
                samples += 1
        assert set(helps.values()) == {1} and len(helps) == len(METRICS)
    assert samples == small.sample_count
    assert len(set(per_metric.values())) == 1
    k8s = {n["host"] for n in small.nodes.to_pylist() if n["cluster"] == "ash-k8s"}
    assert pods_on and pods_on <= k8s


def test_prom_values_match_the_parquet_samples(written: Written) -> None:
    first = written["files"]["dcgm"][0]
    part = pq.read_table(written["out"] / "parquet" / "gpu_metrics" / "part-0000.parquet")
    expected = sorted(
        zip(part["metric"].to_pylist(), part["value"].to_pylist(), strict=True)
    )  # fmt: skip
    found = sorted(
        (m["name"], float(m["value"]))
        for m in map(SAMPLE.match, first.read_text().splitlines())
        if m
    )
    assert found == expected


def test_sacct_has_a_header_then_jobs_and_their_steps(
    small: SimulatedCluster, written: Written
) -> None:
    lines = (written["out"] / "slurm" / "sacct.txt").read_text().splitlines()
    assert lines[0].split("|") == list(FIELDS)
    rows = [line.split("|") for line in lines[1:]]
    assert {len(r) for r in rows} == {len(FIELDS)}
    jobs = {j["job_id"]: j for j in small.jobs.to_pylist()}
    kubernetes = {c["cluster"] for c in small.clusters.to_pylist() if c["scheduler"] != "slurm"}
    slurm_jobs = [j for j in jobs.values() if j["cluster"] not in kubernetes]
    job_rows = [r for r in rows if "." not in r[0]]
    step_rows = [r for r in rows if "." in r[0]]
    assert len(job_rows) == len(slurm_jobs) and len(step_rows) == small.job_steps.num_rows
    steps_of: dict[str, list[str]] = defaultdict(list)
    last_job = None
    for row in rows:
        job_id, _, step = row[0].partition(".")
        if step:
            assert job_id == last_job  # a job's steps follow its own line
            steps_of[job_id].append(step)
        else:
            last_job = job_id
    for row in job_rows:
        record = dict(zip(FIELDS, row, strict=True))
        job = jobs[record["JobID"]]
        assert record["State"].split()[0] == job["state"]
        assert re.fullmatch(r"(\d+-)?\d\d:\d\d:\d\d", record["Elapsed"])
        if job["start_at"] is None:
            assert record["Start"] == "Unknown" and record["NodeList"] == "None assigned"
        else:
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", record["Start"])
            assert hostlist.expand(record["NodeList"]) == sorted(
                job["node_list"], key=hostlist.sort_key
            )
            assert f"={job['gpus']}," in record["AllocTRES"]
            assert steps_of[record["JobID"]] == ["batch", "extern", "0"]
        if job["end_at"] is None:
            assert record["End"] == "Unknown"
        if job["state"] == "CANCELLED":
            assert re.fullmatch(r"CANCELLED by \d+", record["State"])
    assert any(":h100=" in r[17] for r in job_rows) and any("gres/gpu=" in r[17] for r in job_rows)


def test_inventory_csvs_have_the_ddl_header(small: SimulatedCluster, written: Written) -> None:
    for name in ("sites", "clusters", "nodes"):
        path = written["out"] / "inventory" / f"{name}.csv"
        header = path.read_text().splitlines()[0].replace('"', "").split(",")
        assert header == ddl_schema(name).names
        table = pacsv.read_csv(path)
        assert table.num_rows == small.tables()[name].num_rows
    nodes = pacsv.read_csv(written["out"] / "inventory" / "nodes.csv")
    assert nodes["host"].to_pylist() == small.nodes["host"].to_pylist()
    assert nodes["installed_at"][0].as_py().tzinfo is not None


def test_parquet_round_trips_the_tables(small: SimulatedCluster, written: Written) -> None:
    folder: Path = written["out"] / "parquet"
    for name, table in small.tables().items():
        assert pq.read_table(folder / f"{name}.parquet").equals(table), name
    parts = sorted((folder / "gpu_metrics").glob("part-*.parquet"))
    assert len(parts) == len(written["files"]["dcgm"])
    assert sum(pq.read_metadata(p).num_rows for p in parts) == small.sample_count


def test_manifest_describes_the_run(small: SimulatedCluster, written: Written) -> None:
    manifest = json.loads((written["out"] / "manifest.json").read_text())
    assert manifest["config"]["gpus"] == small.config.gpus
    assert manifest["sample_count"] == small.sample_count
    assert manifest["rows"]["jobs"] == small.jobs.num_rows
    listed = {p for paths in manifest["files"].values() for p in paths}
    assert "slurm/sacct.txt" in listed and "dcgm/metrics-0000.prom" in listed
