"""Hostile input for every ingest reader: mutated real files and random bytes.

Whatever arrives, an ingest either stores one whole batch (rows plus rejects naming the line)
or refuses the source with a UserError naming it, and the database stays consistent: every
row of a batch is counted in wanka.ingest_batches, and a refused source leaves no row behind.
Never another exception: a crash in a reader is a bug this test finds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.commands.common import shared_data
from tests.conftest import Draw, examples
from tests.warehouse.ingest.test_nccl import ALL_REDUCE
from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.ingest import ReadOptions, ingest
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.simulate.formats import write_formats

#: Base tables an ingest can write, to check every row's batch is accounted for.
TABLES = ("gpu_metrics", "jobs", "job_steps", "job_events", "nodes", "pods", "nccl_results")

#: Real files of each format (from ../shared/data) — read in place, never copied.
REAL = {
    "nvidia-smi": "nvidia-smi/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
    "sacct": "slurm/sacct-output-v2.txt",
    "pods": "alibaba/openb_pod_list_default.csv",
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A few KB of each format: real files' heads, the simulator's DCGM text and inventory."""
    out = tmp_path_factory.mktemp("sim")
    cluster = simulate_cluster(SimConfig(gpus=16, hours=0.05, interval_s=60, seed=3))
    files = write_formats(cluster, out, kinds=("dcgm", "inventory", "slurm"))
    found = {
        "dcgm": files["dcgm"][0].read_bytes()[:6000],
        "inventory": files["inventory"][0].read_bytes()[:4000],
        "nccl-tests": ALL_REDUCE.encode(),
    }
    data = shared_data()
    for fmt, rel in REAL.items():
        found[fmt] = (data / rel).read_bytes()[:6000]
    return found


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


def options(fmt: str) -> ReadOptions:
    if fmt == "pods":
        from datetime import UTC, datetime

        return ReadOptions(trace_start=datetime(2023, 1, 1, tzinfo=UTC))
    if fmt == "nvidia-smi":
        return ReadOptions(host="fuzz-host")
    return ReadOptions()


def mutate(data: bytes, draw: Draw) -> bytes:
    """Truncate, flip bytes, drop or repeat lines, or splice in junk — a few times."""
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["truncate", "flip", "drop", "repeat", "junk", "fields"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if how == "truncate":
            data = data[:at]
        elif how == "flip":
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
        elif how in ("drop", "repeat"):
            lines = data.split(b"\n")
            i = at % len(lines)
            lines[i : i + 1] = [] if how == "drop" else [lines[i]] * draw(st.integers(2, 5))
            data = b"\n".join(lines)
        elif how == "junk":
            junk = draw(st.binary(min_size=1, max_size=40))
            data = data[:at] + junk + data[at:]
        else:  # an extra or a missing separator on one line
            sep = draw(st.sampled_from([b",", b"|", b" ", b"\t", b"{", b"}", b'"', b"="]))
            data = data[:at] + sep + data[at:]
    return data


@st.composite
def hostile(draw: st.DrawFn, fmt: str, sample: bytes) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))  # noise
    return mutate(sample, draw)


def accounted(eng: Engine) -> None:
    """Every row of every table belongs to a recorded batch, which counted it.

    A batch's rows can only shrink afterwards: jobs and nodes are replaced by key (a later batch
    of the same job wins), so a table holds at most the rows its batch recorded.
    """
    counts: dict[int, int] = {}
    for table in TABLES:
        for batch_id, n in eng.con.execute(
            f"SELECT batch_id, count(*) FROM {table} GROUP BY ALL"
        ).fetchall():
            counts[batch_id] = counts.get(batch_id, 0) + n
    recorded = dict(eng.con.execute("SELECT batch_id, rows FROM wanka.ingest_batches").fetchall())
    orphans = {b: n for b, n in counts.items() if b not in recorded}
    assert not orphans, f"rows of batches no ingest recorded: {orphans}"
    over = {b: (n, recorded[b]) for b, n in counts.items() if n > recorded[b]}
    assert not over, f"batches holding more rows than they recorded: {over}"


FORMATS = ["dcgm", "nvidia-smi", "sacct", "pods", "nccl-tests", "inventory"]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
@settings(
    max_examples=examples(0.4),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_reader_never_crashes_and_never_half_stores(
    fmt: str, data: st.DataObject, samples: dict[str, bytes], eng: Engine, tmp_path: Path
) -> None:
    body = data.draw(hostile(fmt, samples[fmt]))
    path = tmp_path / f"input-{os.getpid()}.txt"
    path.write_bytes(body)
    before = eng.con.execute("SELECT count(*) FROM wanka.ingest_batches").fetchall()[0][0]
    try:
        results = ingest(eng, fmt, [str(path)], options(fmt), force=True)
    except UserError as error:
        assert str(error), "an error must say what is wrong"
        after = eng.con.execute("SELECT count(*) FROM wanka.ingest_batches").fetchall()[0][0]
        assert after == before  # refused whole: no batch recorded
    else:
        (result,) = results
        assert result.batch_id is not None
        if result.rejected:
            assert result.first_reject is not None and result.first_reject.reason
    accounted(eng)


@pytest.mark.slow
@settings(
    max_examples=examples(0.3),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_damaged_parquet_file_is_refused_whole(
    data: st.DataObject, eng: Engine, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    good = tmp_path / "good.parquet"
    table = pa.table({"host": [f"h{i}" for i in range(200)], "cluster": ["c"] * 200})
    pq.write_table(table, good, row_group_size=50)
    raw = good.read_bytes()
    body = mutate(raw, data.draw)
    path = tmp_path / f"bad-{os.getpid()}.parquet"
    path.write_bytes(body)
    try:
        ingest(eng, "parquet", [str(path)], ReadOptions(table="nodes"), force=True)
    except UserError as error:
        assert path.name in str(error)
    accounted(eng)
