"""kill -9 of a real `wanka serve` mid-ingest, mid-refresh and mid-stream, then a restart.

Each test copies one small demo warehouse, starts `wanka serve` on it, has an ingest
acknowledged, provokes the fault and kills the server with SIGKILL while the work is in flight.
A second server on the same file must then hold: every batch in wanka.ingest_batches whole and
no rows of unrecorded batches, every acknowledged batch present, and after a REFRESH each dynamic
table equal to its defining query. (The CLI's own kill -9 and disk-full cases are in
tests/warehouse/ingest/test_faults.py; corrupt input in test_fuzz.py.)
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, invoke_wanka
from tests.demo_clusters import TINY
from tests.service.http.test_serve_process import came_up
from tests.warehouse.dynamic.test_shipped import same_rows
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster, write_formats

pytestmark = pytest.mark.slow
ADMIN, WRITER, PW = ("ada", "pw"), ("wes", "pw"), "pw"
BIG = "big_copy"  # a dynamic table whose full refresh writes many rows
BIG_SQL = "SELECT m.host, m.metric, m.ts, m.value, r.range AS k FROM gpu_metrics m, range(24) r"


@pytest.fixture(scope="module")
def base(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses
) -> tuple[Path, list[Path]]:
    """The tiny demo warehouse with users, and DCGM files (a few MB each) to upload."""
    folder = tmp_path_factory.mktemp("faults")
    db = warehouses.demo(TINY, folder / "base.duckdb")
    for name, role in (("ada", "admin"), ("wes", "writer")):
        added = invoke_wanka(
            "--db", str(db), "user", "add", name, "--role", role, "--password-stdin", input=PW
        )
        assert added.returncode == 0, added.stderr
    cluster = simulate_cluster(SimConfig(gpus=256, hours=0.5, interval_s=30, seed=5))
    prom = write_formats(cluster, folder / "later", kinds=("dcgm",), max_rows=60_000)["dcgm"]
    return db, prom


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(
    db: Path, port: int | None = None, extra: list[str] | tuple[str, ...] = ()
) -> Iterator[tuple[subprocess.Popen[bytes], httpx.Client]]:
    """`wanka serve` on `db` (no scheduler: refreshes happen when a test asks), on `port` or a
    free one, with `extra` options."""
    port = port or free_port()
    command = [
        sys.executable, "-c", "from service.cli import main; main()", "--db", str(db), "serve",
        "--http-port", str(port), "--pg-port", "0", "--refresh-interval-s", "0", *extra,
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, env=dict(os.environ))
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", auth=ADMIN, timeout=120)
    assert came_up(process, f"http://127.0.0.1:{port}/healthz"), "serve did not start"
    try:
        yield process, client
    finally:
        client.close()
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=60)


def query(client: httpx.Client, sql: str) -> list[list[object]]:
    answer = client.post("/v1/query", json={"sql": sql})
    assert answer.status_code == 200, answer.text
    rows: list[list[object]] = answer.json().get("rows", [])
    return rows


def acknowledged_ingest(client: httpx.Client, path: Path) -> tuple[int, int]:
    """Ingest one file as the writer; its (batch_id, rows) once the server said so."""
    answer = client.post(
        f"/v1/ingest/dcgm?name={path.name}", content=path.read_bytes(), auth=WRITER
    )
    assert answer.status_code == 200, answer.text
    [result] = answer.json()
    return result["batch_id"], result["rows"]["gpu_metrics"]


def in_background(call: Callable[[], object]) -> threading.Thread:
    """Run `call` in a thread; the server killed under it is the point, not an error."""

    def run() -> None:
        with suppress(httpx.TransportError):
            call()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def kill_when(process: subprocess.Popen[bytes], ready: threading.Event, why: str) -> None:
    """SIGKILL the server once `ready` is set (polled with a deadline)."""
    assert ready.wait(120), f"never in flight: {why}"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def holds_after_restart(db: Path, acknowledged: list[tuple[int, int]]) -> None:
    """A new server on `db` starts; every batch whole; tables equal their queries after REFRESH."""
    with serving(db) as (_, client):
        for (name,) in query(client, "SELECT name FROM wanka.dynamic_tables"):
            query(client, f"REFRESH DYNAMIC TABLE {name}")
    with Engine(str(db)) as engine:
        cur = engine.cursor()
        held = dict(cur.execute("SELECT batch_id, count(*) FROM gpu_metrics GROUP BY 1").fetchall())
        recorded = dict(
            cur.execute(
                "SELECT batch_id, rows FROM wanka.ingest_batches "
                "WHERE target_table = 'gpu_metrics' OR source_format = 'dcgm'"
            ).fetchall()
        )
        batches = cur.execute("SELECT * FROM wanka.ingest_batches ORDER BY 1").fetchall()
        assert held == {b: n for b, n in recorded.items() if n}, f"partial/unrecorded: {batches}"
        for batch, rows in acknowledged:
            assert held.get(batch) == rows, f"acknowledged batch {batch} lost: {batches}"
        names = [n for (n,) in cur.execute("SELECT name FROM wanka.dynamic_tables").fetchall()]
        for name in names:
            if name == BIG:
                differ = (
                    f"(FROM {BIG} EXCEPT ALL {BIG_SQL}) UNION ALL ({BIG_SQL} EXCEPT ALL FROM {BIG})"
                )
                assert cur.execute(f"SELECT count(*) FROM ({differ})").fetchall() == [(0,)]
            else:
                same_rows(cur, name)
        cur.close()


def test_kill_during_a_multipart_ingest(base: tuple[Path, list[Path]], tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    shutil.copy(base[0], db)
    first, *upload = base[1]
    with serving(db) as (process, client):
        acknowledged = [acknowledged_ingest(client, first)]
        after = f"WHERE batch_id > {acknowledged[0][0]}"
        files = [("file", (p.name, p.read_bytes())) for p in upload]
        sent = in_background(
            lambda: httpx.post(
                f"{client.base_url}/v1/ingest/dcgm", files=files, auth=WRITER, timeout=120
            )
        )
        ready = threading.Event()
        deadline = time.monotonic() + 120
        while not ready.is_set() and time.monotonic() < deadline:
            # one file of the upload is visible to readers: the writer is inside its COMMIT
            # or past it. Visible is not durable: a bulk COMMIT that DuckDB turns into a
            # checkpoint shows its rows before it returns, and a kill then loses them; the
            # request was never answered, so only wholeness is asked of those batches.
            if query(client, f"SELECT count(*) FROM wanka.ingest_batches {after}")[0][0]:
                ready.set()
        assert sent.is_alive(), "the upload ended before the kill: make it bigger"
        kill_when(process, ready, "no batch of the upload committed")
    holds_after_restart(db, acknowledged)


def test_kill_during_a_refresh(base: tuple[Path, list[Path]], tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    shutil.copy(base[0], db)
    with serving(db) as (process, client):
        query(
            client,
            f"CREATE DYNAMIC TABLE {BIG} WITH (freshness = '1 hour', refresh_mode = 'full') "
            f"AS {BIG_SQL}",
        )
        acknowledged = [acknowledged_ingest(client, base[1][0])]
        start = cpu_ticks(process.pid)
        refresh = in_background(
            lambda: client.post(f"/v1/dynamic-tables/{BIG}/refresh?full=true", auth=WRITER)
        )
        ready = threading.Event()
        deadline = time.monotonic() + 60
        while refresh.is_alive() and time.monotonic() < deadline:
            if cpu_ticks(process.pid) - start >= 30:  # 0.3 CPU-seconds into the refresh
                ready.set()
                break
            time.sleep(0.01)  # a polling interval, so the poll leaves the CPUs to the server
        assert refresh.is_alive(), "the refresh ended before the kill: make the table bigger"
        kill_when(process, ready, "the refresh")
    holds_after_restart(db, acknowledged)


def test_kill_during_a_large_stream(base: tuple[Path, list[Path]], tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    shutil.copy(base[0], db)
    with serving(db) as (process, client):
        acknowledged = [acknowledged_ingest(client, base[1][0])]
        sql = "SELECT m.*, r.range FROM gpu_metrics m, range(1000) r"
        with client.stream("POST", "/v1/query", json={"sql": sql, "format": "ndjson"}) as answer:
            assert answer.status_code == 200
            assert next(answer.iter_bytes())  # rows are streaming out
            ready = threading.Event()
            ready.set()
            kill_when(process, ready, "the stream")
    holds_after_restart(db, acknowledged)
