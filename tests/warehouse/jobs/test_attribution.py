"""Which job held which GPU: labels, whole nodes, shared GPUs, and the per-job usage tables."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.warehouse.samples import insert_samples, minute
from tests.warehouses import Warehouses
from warehouse.dynamic.shipped import install_shipped
from warehouse.jobs import attribution
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

UTIL = "DCGM_FI_DEV_GPU_UTIL"


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


def samples(eng: Engine, rows: list[tuple[int, str, int, float, str | None]]) -> None:
    """(minute, host, gpu, util, labels JSON) rows of DCGM_FI_DEV_GPU_UTIL, one insert."""
    insert_samples(
        eng.con,
        [
            {"ts": minute(m), "host": h, "gpu": g, "uuid": f"{h}-{g}", "metric": UTIL}
            | {"value": v, "labels": lab}
            for m, h, g, v, lab in rows
        ],
    )


def refresh(eng: Engine) -> None:
    for name in ("job_gpu_usage_daily", "job_gpu_usage_by_gpu", "job_gpu_usage"):
        execute(eng.con, f"REFRESH DYNAMIC TABLE {name}").read_all()


def test_label_stretches_grow_and_split_at_a_gap(eng: Engine) -> None:
    job = '{"hpc_job":"42"}'
    samples(eng, [(0, "h1", 0, 50, job), (1, "h1", 0, 50, job)])
    samples(eng, [(2, "h1", 0, 50, job)])  # the next scrape: the same stretch
    samples(eng, [(30, "h1", 0, 50, job)])  # 28 minutes later: a new stretch
    found = eng.con.sql(
        "SELECT job_id, host, gpu, source, strftime(start_at, '%H:%M:%S.%g'), "
        "strftime(end_at, '%H:%M:%S.%g') FROM job_gpus ORDER BY start_at"
    ).fetchall()
    assert found == [
        ("42", "h1", 0, "dcgm_hpc_job", "00:00:00.000", "00:02:00.001"),
        ("42", "h1", 0, "dcgm_hpc_job", "00:30:00.000", "00:30:00.001"),
    ]
    labels = eng.con.sql("SELECT host, gpu FROM gpu_attribution WHERE source = 'labels'")
    assert labels.fetchall() == [("h1", 0)]  # one row per GPU, however many jobs


def test_a_shared_gpu_counts_once_per_job(eng: Engine) -> None:
    install_shipped(eng)
    a, b = '{"hpc_job":"a"}', '{"hpc_job":"b"}'
    pod = '{"container":"c","namespace":"ml","pod":"train-0"}'
    # GPU 0 shared by a and b: the exporter sends one copy of each sample per job
    samples(eng, [(m, "h1", 0, 40 + m, a) for m in range(4)])
    samples(eng, [(m, "h1", 0, 40 + m, b) for m in range(2, 4)])
    samples(eng, [(m, "h1", 1, 10, pod) for m in range(4)])
    refresh(eng)
    by_gpu = eng.con.sql(
        "SELECT job_id, gpu, samples, gpu_seconds, util_pct FROM job_gpu_usage_by_gpu ORDER BY 1"
    ).fetchall()
    assert by_gpu == [
        ("a", 0, 4, 240.0, 41.5),
        ("b", 0, 2, 120.0, 42.5),
        ("ml/train-0", 1, 4, 240.0, 10.0),
    ]
    jobs = eng.con.sql("SELECT job_id, gpus_seen FROM job_gpu_usage ORDER BY 1").fetchall()
    assert jobs == [("a", 1), ("b", 1), ("ml/train-0", 1)]


def test_whole_nodes_are_exact_and_shared_nodes_ambiguous(eng: Engine) -> None:
    install_shipped(eng)
    eng.con.execute("INSERT INTO nodes (host, gpus) VALUES ('n1', 2), ('n2', 2), ('n3', 2)")
    eng.con.execute(
        "INSERT INTO jobs (job_id, start_at, state, gpus, node_list) VALUES "
        "('whole', TIMESTAMPTZ '2026-11-01', 'RUNNING', 4, ['n1', 'n2']), "
        "('part', TIMESTAMPTZ '2026-11-01', 'RUNNING', 1, ['n3'])"
    )
    samples(
        eng, [(m, h, g, 30.0 * g, None) for m in range(3) for h in ("n1", "n3") for g in (0, 1)]
    )
    refresh(eng)  # a refresh first brings the whole-node rows up to the jobs
    rows = eng.con.sql(
        "SELECT job_id, host, gpu, source, exact FROM job_gpus ORDER BY ALL"
    ).fetchall()
    assert rows == [
        ("part", "n3", None, "ambiguous", False),
        *[("whole", h, g, "whole_node", True) for h in ("n1", "n2") for g in (0, 1)],
    ]
    usage = eng.con.sql("SELECT job_id, gpus_seen, util_pct FROM job_gpu_usage").fetchall()
    assert usage == [("whole", 2, 15.0)]  # n2 sent no telemetry; the shared job is not guessed
    # the job ends: its rows close, and samples after its end are nobody's
    eng.con.execute(
        "UPDATE jobs SET state = 'COMPLETED', end_at = TIMESTAMPTZ '2026-11-01 00:02:00' "
        "WHERE job_id = 'whole'"
    )
    samples(eng, [(5, "n1", 0, 99.0, None)])
    refresh(eng)
    usage = eng.con.sql("SELECT job_id, gpus_seen, util_pct FROM job_gpu_usage").fetchall()
    assert usage == [("whole", 2, 15.0)]  # minutes 0 and 1: the sample at its end is not its
    assert eng.con.sql(
        "SELECT count(*) FROM job_gpus WHERE job_id = 'whole' AND end_at IS NULL"
    ).fetchall() == [(0,)]


def test_hosts_whose_exporter_names_jobs_get_no_whole_node_rows(eng: Engine) -> None:
    eng.con.execute("INSERT INTO nodes (host, gpus) VALUES ('h1', 8)")
    eng.con.execute(
        "INSERT INTO jobs (job_id, start_at, state, gpus, node_list) VALUES "
        "('7', TIMESTAMPTZ '2026-11-01', 'RUNNING', 8, ['h1'])"
    )
    samples(eng, [(0, "h1", 0, 50, '{"hpc_job":"7"}')])
    attribution.sync_whole_nodes(eng.con)
    sources = eng.con.sql("SELECT DISTINCT source FROM job_gpus").fetchall()
    assert sources == [("dcgm_hpc_job",)]


def test_a_label_naming_an_unknown_job_is_kept_and_joined_later(eng: Engine) -> None:
    install_shipped(eng)
    samples(eng, [(m, "h1", 0, 80, '{"hpc_job":"900"}') for m in range(3)])
    refresh(eng)
    assert eng.con.sql("SELECT job_id FROM job_gpu_usage").fetchall() == [("900",)]
    eng.con.execute("INSERT INTO jobs (job_id, user) VALUES ('900', 'alice')")
    joined = "SELECT u.job_id, j.user FROM job_gpu_usage u JOIN jobs j USING (job_id)"
    assert eng.con.sql(joined).fetchall() == [("900", "alice")]


def test_a_dcgm_exporter_scrape_with_hpc_job_labels(eng: Engine) -> None:
    """Two scrapes of dcgm-exporter run with --hpc-job-mapping-dir (written by hand after its
    output: GPU 0 runs job 4242; GPU 1 is shared by 4243 and 4244, so each of its samples comes
    once per job; GPU 2 is idle and names no job)."""
    from datetime import UTC, datetime, timedelta

    from tests.conftest import REPO
    from warehouse.ingest import ReadOptions, ingest

    install_shipped(eng)
    folder = REPO / "tests/warehouse/fixtures/dcgm_hpc_job"
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for k in (1, 2):
        at = start + timedelta(minutes=k)
        [done] = ingest(eng, "dcgm", [str(folder / f"scrape{k}.prom")], ReadOptions(at=at))
        assert done.rejected == 0 and done.rows == {"gpu_metrics": 12}
    refresh(eng)
    rows = eng.con.sql(
        "SELECT job_id, gpu, source, end_at - start_at FROM job_gpus ORDER BY job_id"
    ).fetchall()
    assert rows == [
        ("4242", 0, "dcgm_hpc_job", timedelta(minutes=1, milliseconds=1)),
        ("4243", 1, "dcgm_hpc_job", timedelta(minutes=1, milliseconds=1)),
        ("4244", 1, "dcgm_hpc_job", timedelta(minutes=1, milliseconds=1)),
    ]
    usage = eng.con.sql(
        "SELECT job_id, gpus_seen, gpu_seconds, util_pct, round(energy_kwh, 6) "
        "FROM job_gpu_usage ORDER BY job_id"
    ).fetchall()
    assert usage == [
        ("4242", 1, 120.0, 81.5, round(42e6 * 2 / 3.6e9, 6)),
        ("4243", 1, 120.0, 41.5, round(21e6 * 2 / 3.6e9, 6)),
        ("4244", 1, 120.0, 41.5, round(21e6 * 2 / 3.6e9, 6)),
    ]
