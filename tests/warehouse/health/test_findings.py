"""`wanka health`'s rules (warehouse/health/findings.py) on telemetry with known faults: each
faulty GPU gets the state its rule says with the evidence, healthy ones stay ok, the thresholds in
wanka.health_rules decide, and the CLI and GET /v1/health give the same report."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from service.cli import app
from tests.warehouses import Warehouses
from warehouse.dynamic.shipped import install_shipped
from warehouse.health import findings
from warehouse.kernel.engine import Engine
from warehouse.tsdb.append import append

T0 = datetime(2026, 12, 1, tzinfo=UTC)
XID, SBE, UTIL = "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_GPU_UTIL"
ROWS, BAD_ROWS = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"


def fleet() -> pa.Table:
    """Two hosts of 4 GPUs, 3 hours of 1-minute samples: n1/0 shows XID 79 twice (two hours
    apart), n1/1 corrected ECC errors climbing (one more each minute for 16 minutes; one every
    10 minutes before, a trickle no rule minds), n2/3 falls silent 20 minutes before the end,
    n2/0 has 200 rows remapped for corrected errors and 50, then 60 (from 01:40), for
    uncorrectable ones: 260 of its 512 spares."""
    rows = []
    for k in range(180):
        ts = T0 + timedelta(minutes=k)
        for host in ("n1", "n2"):
            for gpu in range(4):
                if (host, gpu) == ("n2", 3) and k >= 160:
                    continue
                xid = 79.0 if (host, gpu) == ("n1", 0) and k in (10, 11, 130) else 0.0
                climb = max(0, min(k, 165) - 149)
                sbe = float(k // 10 + climb) if (host, gpu) == ("n1", 1) else 0.0
                remapped = [(ROWS, 200.0), (BAD_ROWS, 50.0 if k < 100 else 60.0)]
                for metric, value in (
                    (XID, xid),
                    (SBE, sbe),
                    (UTIL, 50.0),
                    *(remapped if (host, gpu) == ("n2", 0) else []),
                ):
                    rows.append((ts, host, gpu, f"GPU-{host}-{gpu}", metric, value))
    names = ["ts", "host", "gpu", "uuid", "metric", "value"]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> str:
    path = str(warehouses.empty(Path(tmp_path_factory.mktemp("health")) / "w.duckdb"))
    with Engine(path) as eng:
        cur = eng.cursor()
        append(cur, fleet())
        cur.close()
        install_shipped(eng)  # gpu_windows, which the window and silence rules read
    return path


@pytest.fixture
def cur(db: str) -> Iterator[Any]:
    with Engine(db) as eng:
        cursor = eng.cursor()
        yield cursor
        cursor.close()


def states(found: dict[str, Any]) -> dict[tuple[str, int], tuple[str, list[str]]]:
    return {(g["host"], g["gpu"]): (g["state"], [r["rule"] for r in g["rules"]])
            for g in found["gpus"]}  # fmt: skip


def test_each_fault_gets_its_state_and_the_rest_are_ok(cur: Any) -> None:
    found = findings.report(cur)
    assert states(found) == {
        ("n1", 0): ("replace", ["repeated_hw_xid", "xid_drain"]),
        ("n1", 1): ("watch", ["sbe_climb"]),
        ("n2", 0): ("watch", ["remapped_rows"]),
        ("n2", 3): ("watch", ["silent"]),
    }
    assert found["counts"]["gpus"] == {"watch": 3, "drain": 0, "replace": 1, "ok": 4}
    assert [(n["host"], n["state"], n["gpus"]) for n in found["nodes"]] == [
        ("n1", "replace", [0, 1]), ("n2", "watch", [0, 3])]  # fmt: skip
    remapped = found["gpus"][2]["rules"][0]
    assert remapped["count"] == 260 and remapped["flagged"] == "2026-12-01T01:40:00+00:00"
    assert remapped["evidence"][0]["detail"] == (
        "260 of 512 spare rows remapped (60 for uncorrectable errors)"
    )
    xid = found["gpus"][0]["rules"][0]
    assert xid["count"] == 2 and [e["code"] for e in xid["evidence"]] == [79, 79]
    assert xid["evidence"][0]["detail"] == "GPU has fallen off the bus"
    silent = found["gpus"][-1]["rules"][0]["evidence"][0]["detail"]
    assert silent.startswith("silent for 1200 s")
    text = findings.render(found)
    assert "4 GPUs ok, 3 watch, 0 drain, 1 replace" in text and "XID 79" in text


def test_the_thresholds_are_the_rules_table(cur: Any) -> None:
    cur.execute("UPDATE wanka.health_rules SET threshold = 3 WHERE rule = 'repeated_hw_xid'")
    cur.execute("UPDATE wanka.health_rules SET threshold = 100 WHERE rule = 'sbe_climb'")
    try:
        findings.refresh_inputs(cur)  # a rule changed: health_findings is recomputed
        found = states(findings.report(cur))
        assert found[("n1", 0)] == ("drain", ["xid_drain"]) and ("n1", 1) not in found
        cur.execute("UPDATE wanka.health_rules SET threshold = 261 WHERE rule = 'remapped_rows'")
        findings.refresh_inputs(cur)
        assert ("n2", 0) not in states(findings.report(cur))
    finally:
        cur.execute("UPDATE wanka.health_rules SET threshold = 2 WHERE rule = 'repeated_hw_xid'")
        cur.execute("UPDATE wanka.health_rules SET threshold = 6 WHERE rule = 'sbe_climb'")
        cur.execute("UPDATE wanka.health_rules SET threshold = 256 WHERE rule = 'remapped_rows'")
        findings.refresh_inputs(cur)


def test_the_command_and_the_endpoint_say_the_same(db: str) -> None:
    from service.http import create_app
    from service.serve.server import Server
    from warehouse.security.users import add_user

    ran = CliRunner().invoke(app, ["--db", db, "health", "--format", "json"])
    assert ran.exit_code == 0, ran.output
    said = json.loads(ran.output)
    assert states(said)[("n1", 0)][0] == "replace"
    table = CliRunner().invoke(app, ["--db", db, "health"])
    assert table.exit_code == 0 and "replace  n1" in table.output
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    with Server(db) as server:
        cursor = server.engine.cursor()
        add_user(cursor, "ops", "reader", "health-pw-1")
        cursor.close()
        with TestClient(create_app(server)) as client:
            answer = client.get("/v1/health", auth=("ops", "health-pw-1"))
            assert answer.status_code == 200, answer.text
            assert answer.json() == said
            assert client.get("/v1/health").status_code == 401
