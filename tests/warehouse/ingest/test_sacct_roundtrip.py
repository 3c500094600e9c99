"""sacct round trips: ingesting twice equals once; the simulator's sacct text reads back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.ingest.sacct_support import load, rows
from tests.warehouses import Warehouses
from warehouse.ingest import ingest
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster, write_formats

_job_ids = st.integers(1, 40).map(str) | st.tuples(st.integers(1, 9), st.integers(0, 3)).map(
    lambda t: f"{t[0]}_{t[1]}"
)
_lines = st.tuples(
    _job_ids,
    st.sampled_from(["", ".batch", ".extern", ".0"]),
    st.sampled_from(["COMPLETED", "RUNNING", "FAILED", "CANCELLED by 7", "PENDING"]),
    st.sampled_from(["gres/gpu=8", "gres/gpu:h100=4", "cpu=2", ""]),
    st.sampled_from(["gpu[01-02]", "gpu03", "None assigned", ""]),
    st.integers(0, 200_000),
)


@pytest.fixture(scope="module")
def shared_eng(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses
) -> Iterator[Engine]:
    with Engine(str(warehouses.empty(tmp_path_factory.mktemp("prop") / "w.duckdb"))) as engine:
        yield engine


@settings(max_examples=examples(0.25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_lines, min_size=1, max_size=30))
def test_ingesting_twice_equals_ingesting_once(
    shared_eng: Engine, tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[Any, ...]]
) -> None:
    engine = shared_eng
    for table in ("jobs", "job_steps", "wanka.ingest_batches", "wanka.ingest_rejects"):
        engine.con.execute(f"DELETE FROM {table}")
    text = "JobID|State|Elapsed|AllocTRES|NodeList\n" + "".join(
        f"{job_id}{step}|{state}|{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        f"|{tres}|{hosts}\n"
        for job_id, step, state, tres, hosts, seconds in lines
    )
    folder = tmp_path_factory.mktemp("lines")
    load(engine, folder, text)
    once = rows(engine, "SELECT * EXCLUDE (batch_id) FROM jobs ORDER BY job_id")
    steps = rows(engine, "SELECT * EXCLUDE (batch_id) FROM job_steps ORDER BY ALL")
    load(engine, folder, text, force=True)
    assert rows(engine, "SELECT * EXCLUDE (batch_id) FROM jobs ORDER BY job_id") == once
    assert rows(engine, "SELECT * EXCLUDE (batch_id) FROM job_steps ORDER BY ALL") == steps
    assert len(once) == len({job_id for job_id, step, *_ in lines if not step})


# -- the simulator ------------------------------------------------------------------------------


def test_the_simulators_sacct_reads_back(eng: Engine, tmp_path: Path) -> None:
    cluster = simulate_cluster(SimConfig(gpus=64, hours=0.25))
    files = write_formats(cluster, tmp_path / "sim")
    [result] = ingest(eng, "sacct", [str(p) for p in files["slurm"]])
    slurm = {c["cluster"] for c in cluster.clusters.to_pylist() if c["scheduler"] == "slurm"}
    window_end = cluster.config.start.timestamp() + cluster.config.window_s
    expected = [
        j
        for j in cluster.jobs.to_pylist()
        if j["cluster"] in slurm and j["submit_at"].timestamp() <= window_end
    ]
    assert result.rejected == 0 and result.rows["jobs"] == len(expected) > 100
    assert result.rows["job_steps"] == cluster.job_steps.num_rows
    got = {
        job_id: (state, reason, gpus, node_list)
        for job_id, state, reason, gpus, node_list in rows(
            eng, "SELECT job_id, state, state_reason, gpus, node_list FROM jobs"
        )
    }
    for j in expected:
        state, reason, gpus, node_list = got[j["job_id"]]
        assert (state, reason, node_list) == (j["state"], j["state_reason"], j["node_list"])
        # AllocTRES for jobs that got nodes, ReqTRES for all: pending jobs keep their request
        assert gpus == j["gpus"]
