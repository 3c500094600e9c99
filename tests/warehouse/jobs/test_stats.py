"""`wanka jobstats`' data, notes and text, and its faces: the CLI (exit 2) and HTTP (404)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import invoke_wanka, run_wanka
from tests.warehouse.samples import insert_samples, minute
from tests.warehouses import Warehouses
from warehouse.dynamic.shipped import install_shipped
from warehouse.jobs import stats
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

UTIL, FB, POWER = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"


def build(eng: Engine) -> None:
    """Job 7: 4 GPUs on h1 for 30 minutes, two of them idle, little memory, a 24 h limit."""
    install_shipped(eng)
    eng.con.execute("INSERT INTO nodes (host, gpu_model, gpus) VALUES ('h1', 'H100', 8)")
    eng.con.execute(
        "INSERT INTO jobs (job_id, user, account, partition, state, start_at, end_at, "
        "elapsed_s, time_limit_s, gpus, nodes, node_list) VALUES ('7', 'alice', 'ml', 'gpu', "
        "'COMPLETED', TIMESTAMPTZ '2026-11-01', TIMESTAMPTZ '2026-11-01 00:30:00', 1800, "
        "86400, 4, 1, ['h1'])"
    )
    rows: list[dict[str, object]] = []
    for m in range(30):
        for gpu in range(4):
            labels = '{"hpc_job":"7"}'
            util = 0.0 if gpu >= 2 else 20.0
            for metric, value in ((UTIL, util), (FB, 2048.0), (POWER, 100.0 + 100 * (gpu < 2))):
                row = {"ts": minute(m), "host": "h1", "gpu": gpu, "metric": metric, "value": value}
                rows.append(row | {"labels": labels})
    insert_samples(eng.con, rows)
    for name in ("job_gpu_usage_daily", "job_gpu_usage_by_gpu", "job_gpu_usage"):
        execute(eng.con, f"REFRESH DYNAMIC TABLE {name}").read_all()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Path:
    path = warehouses.empty(tmp_path_factory.mktemp("jobstats") / "w.duckdb")
    with Engine(str(path)) as eng:
        build(eng)
    return path


@pytest.fixture
def eng(db: Path) -> Iterator[Engine]:
    with Engine(str(db)) as engine:
        yield engine


def test_the_report_says_what_the_gpus_did(eng: Engine) -> None:
    found = stats.stats(eng.con, "7")
    assert found["job"]["user"] == "alice" and found["job"]["time_limit_s"] == 86400
    usage = found["usage"]
    assert usage["gpus_seen"] == 4 and usage["util_pct"] == pytest.approx(10.0)
    assert usage["gpu_seconds"] == pytest.approx(4 * 1800)
    assert [g["util_pct"] for g in found["gpus"]] == [20.0, 20.0, 0.0, 0.0]
    rules = {n["rule"]: n["note"] for n in found["notes"]}
    assert rules["idle_gpu"].startswith("did not use 2 of 4 GPUs (h1 GPU 2, h1 GPU 3)")
    assert "10.0 %" in rules["low_util"]
    assert "2.0 GiB of 80 GiB" in rules["low_gpu_memory"]
    assert "oversized_gpu" in rules and "48× too long" in rules["time_limit"]
    json.dumps(found)  # plain data


def test_thresholds_come_from_the_rules_table(eng: Engine) -> None:
    cur = eng.cursor()
    cur.execute("UPDATE wanka.efficiency_rules SET threshold = 5 WHERE rule = 'low_util'")
    try:
        rules = {n["rule"] for n in stats.stats(cur, "7")["notes"]}
        assert "low_util" not in rules and "idle_gpu" in rules
    finally:
        cur.execute("UPDATE wanka.efficiency_rules SET threshold = 25 WHERE rule = 'low_util'")
        cur.close()


def test_an_unknown_job_is_an_error(eng: Engine) -> None:
    with pytest.raises(stats.UnknownJob, match="no job '999'"):
        stats.stats(eng.con, "999")


def test_the_command_prints_the_report_or_json(db: Path) -> None:
    text = invoke_wanka("--db", str(db), "jobstats", "7")
    assert text.returncode == 0, text.stderr
    assert "GPU job statistics" in text.stdout and "did not use 2 of 4 GPUs" in text.stdout
    as_json = invoke_wanka("--db", str(db), "jobstats", "7", "--format", "json")
    assert json.loads(as_json.stdout)["usage"]["gpus_seen"] == 4
    unknown = invoke_wanka("--db", str(db), "jobstats", "999")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().count("\n") == 0 and "no job '999'" in unknown.stderr


def test_http_serves_the_report_to_a_reader(db: Path) -> None:
    import warnings

    from service.http import create_app
    from service.serve.server import Server
    from warehouse.security.users import add_user

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    with Server(str(db)) as server:
        cur = server.engine.cursor()
        add_user(cur, "reader", "reader", "s3cret-pw")
        cur.close()
        with TestClient(create_app(server), raise_server_exceptions=False) as client:
            auth = ("reader", "s3cret-pw")
            found = client.get("/v1/jobs/7/stats", auth=auth)
            assert found.status_code == 200, found.text
            assert found.json()["usage"]["gpus_seen"] == 4
            assert client.get("/v1/jobs/999/stats", auth=auth).status_code == 404
            assert client.get("/v1/jobs/7/stats").status_code == 401


def test_a_new_warehouse_answers_after_ingest_and_refresh(tmp_path: Path) -> None:
    """`wanka ingest … && wanka refresh && wanka jobstats ID` on a file nothing made before:
    its first command gives it the shipped dynamic tables."""
    from tests.conftest import REPO

    db = str(tmp_path / "new.duckdb")
    folder = REPO / "tests/warehouse/fixtures/dcgm_hpc_job"
    for k in (1, 2):
        at = f"2026-11-01T00:0{k}:00Z"
        done = run_wanka("--db", db, "ingest", "dcgm", str(folder / f"scrape{k}.prom"), "--at", at)
        assert done.returncode == 0, done.stderr
    assert run_wanka("--db", db, "refresh").returncode == 0
    report = run_wanka("--db", db, "jobstats", "4243", "--format", "json")
    assert report.returncode == 0, report.stderr
    found = json.loads(report.stdout)
    assert found["usage"]["gpus_seen"] == 1 and found["usage"]["util_pct"] == 41.5
    assert [s["source"] for s in found["sources"]] == ["dcgm_hpc_job"]
