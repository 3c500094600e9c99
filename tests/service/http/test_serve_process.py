"""A real `wanka serve` process: CLI users and tokens, limits, concurrency, loopback rule."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO, invoke_wanka, run_wanka

pytestmark = pytest.mark.slow
SLOW = "SELECT sum(hash(a.range * b.range)) FROM range(400000) a, range(400000) b"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def came_up(process: subprocess.Popen[Any], url: str, within_s: float = 60) -> bool:
    """Whether `url` answered 200 within `within_s` while `process` ran."""
    deadline = time.monotonic() + within_s
    while process.poll() is None and time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # polling for start-up, not timing anything
    return False


@dataclass
class Running:
    url: str
    token: str
    process: subprocess.Popen[str]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    db = str(Path(tmp_path_factory.mktemp("serve")) / "w.duckdb")
    for name, role in (("ann", "reader"), ("wes", "writer"), ("ada", "admin")):
        added = invoke_wanka(
            "--db", db, "user", "add", name, "--role", role, "--password-stdin", input="pw\n"
        )
        assert added.returncode == 0, added.stderr
    made = invoke_wanka("--db", db, "token", "create", "--user", "wes")
    assert made.returncode == 0, made.stderr
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from service.cli import main; main()",
        "--db",
        db,
        "serve",
        "--http-port",
        str(port),
        "--pg-port",
        "0",
        "--refresh-interval-s",
        "0",
    ]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    if not came_up(process, f"{url}/healthz"):
        process.kill()
        output = process.stdout.read() if process.stdout else ""
        pytest.fail(f"wanka serve did not come up: {output}")
    try:
        yield Running(url, made.stdout.strip(), process)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_credentials_from_the_cli(running: Running) -> None:
    assert httpx.post(f"{running.url}/v1/query", json={"sql": "SELECT 1"}).status_code == 401
    basic = httpx.post(f"{running.url}/v1/query", json={"sql": "SELECT 1 AS x"}, auth=("ann", "pw"))
    assert basic.json()["rows"] == [[1]]
    bearer = httpx.post(
        f"{running.url}/v1/query",
        json={"sql": "INSERT INTO sites (site) VALUES ('s1')"},
        headers={"Authorization": f"Bearer {running.token}"},
    )
    assert bearer.json()["rowcount"] == 1


def test_runaway_query_blocks_nobody(running: Running) -> None:
    outcome: dict[str, httpx.Response] = {}

    def runaway() -> None:
        outcome["slow"] = httpx.post(
            f"{running.url}/v1/query",
            json={"sql": SLOW, "timeout_s": 3},
            auth=("ann", "pw"),
            timeout=60,
        )

    worker = threading.Thread(target=runaway)
    worker.start()
    with httpx.Client(base_url=running.url, auth=("ann", "pw")) as client:
        answers = [client.post("/v1/query", json={"sql": f"SELECT {i}"}) for i in range(20)]
    assert worker.is_alive(), "the runaway query ended before the others ran: make it slower"
    assert all(a.status_code == 200 for a in answers)
    worker.join()
    assert outcome["slow"].status_code == 408


def test_readers_served_while_ingest_writes(running: Running) -> None:
    rows = "".join(f"h{i:06d},8\n" for i in range(100_000))
    body = ("host,gpus\n" + rows).encode()
    done: dict[str, httpx.Response] = {}

    def ingest() -> None:
        done["ingest"] = httpx.post(
            f"{running.url}/v1/ingest/inventory", content=body, auth=("wes", "pw"), timeout=120
        )

    writer = threading.Thread(target=ingest)
    writer.start()
    with httpx.Client(base_url=running.url, auth=("ann", "pw")) as client:
        reads = [
            client.post("/v1/query", json={"sql": "SELECT count(*) FROM nodes"}) for _ in range(10)
        ]
    writer.join()
    assert all(r.status_code == 200 for r in reads)
    assert done["ingest"].status_code == 200, done["ingest"].text
    assert done["ingest"].json()[0]["rows"] == {"nodes": 100_000}


def test_readers_served_while_a_refresh_writes(running: Running) -> None:
    created = httpx.post(
        f"{running.url}/v1/query",
        json={
            "sql": "CREATE DYNAMIC TABLE hosts_by_gpus WITH (freshness = '1 hour') AS "
            "SELECT gpus, count(*) AS hosts FROM nodes GROUP BY gpus"
        },
        auth=("ada", "pw"),
        timeout=60,
    )
    assert created.status_code == 200, created.text
    done: dict[str, httpx.Response] = {}

    def refresh() -> None:
        done["refresh"] = httpx.post(
            f"{running.url}/v1/dynamic-tables/hosts_by_gpus/refresh?full=true",
            auth=("wes", "pw"),
            timeout=120,
        )

    writer = threading.Thread(target=refresh)
    writer.start()
    with httpx.Client(base_url=running.url, auth=("ann", "pw")) as client:
        reads = [client.get("/v1/dynamic-tables") for _ in range(5)]
        reads += [
            client.post("/v1/query", json={"sql": "SELECT * FROM hosts_by_gpus"}) for _ in range(5)
        ]
    writer.join()
    assert all(r.status_code == 200 for r in reads), [r.text for r in reads if r.status_code != 200]
    assert done["refresh"].json()[0]["outcome"] == "refreshed", done["refresh"].text


def test_client_that_goes_releases_its_query(running: Running) -> None:
    sql = "SELECT range, hash(range) AS h FROM range(3000000000)"
    with httpx.stream(
        "POST", f"{running.url}/v1/query", json={"sql": sql, "format": "ndjson"}, auth=("ann", "pw")
    ) as response:
        assert next(response.iter_bytes())  # the first rows arrived; now hang up
    gone = 'format="ndjson",outcome="client gone"'
    deadline = time.monotonic() + 30
    while gone not in httpx.get(f"{running.url}/metrics").text:
        assert time.monotonic() < deadline, "the abandoned query was never released"
        time.sleep(0.05)  # polling for the server to notice, not timing anything


def test_non_loopback_bind_needs_users(tmp_path: Path) -> None:
    result = run_wanka(
        "--db",
        str(tmp_path / "empty.duckdb"),
        "serve",
        "--http-host",
        "0.0.0.0",
        "--http-port",
        str(free_port()),
        "--pg-port",
        "0",
    )
    assert result.returncode == 2
    assert "needs users" in result.stderr
