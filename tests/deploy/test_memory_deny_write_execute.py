"""wanka.service sets MemoryDenyWriteExecute=yes: `wanka serve` must live with memory that is
never both writable and executable. Here it serves under the kernel's own form of that rule
(prctl PR_SET_MDWE, Linux >= 6.3, which systemd >= 254 applies for the setting; older systemd
has seccomp refuse the same mmap/mprotect calls), with the unit's Environment= lines, and
answers a remote_write, PromQL, SQL calling a model UDF, and the PostgreSQL wire protocol."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.conftest import REPO
from tests.deploy.tools import UNIT, unit_settings
from tests.service.http.test_serve_process import came_up
from tests.warehouse.remote_write.support import scrape

PR_SET_MDWE, PR_GET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 66, 1
#: Sets the rule on itself (inherited across fork and exec), checks it holds, then becomes argv.
UNDER_MDWE = f"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN}, 0, 0, 0) != 0:
    sys.exit("PR_SET_MDWE: " + os.strerror(ctypes.get_errno()))
if libc.prctl({PR_GET_MDWE}, 0, 0, 0, 0) != {PR_MDWE_REFUSE_EXEC_GAIN}:
    sys.exit("PR_SET_MDWE did not hold")
os.execv(sys.argv[1], sys.argv[1:])
"""
WANKA = [sys.executable, "-c", "from service.cli import main; main()"]
WRITE_HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}
TS_MS = 1_793_491_200_000  # 2026-11-01 00:00 UTC


def under_mdwe(*argv: str) -> list[str]:
    return [sys.executable, "-c", UNDER_MDWE, *argv]


@pytest.fixture(scope="module")
def mdwe() -> None:
    probe = subprocess.run(under_mdwe("/bin/true"), capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"this kernel cannot set the rule ({probe.stderr.strip()}; Linux >= 6.3)")


def unit_environment(tmp_path: Path) -> dict[str, str]:
    """The unit's Environment= lines, but for the cache folder, which is under tmp_path here."""
    values = dict(line.split("=", 1) for line in unit_settings(UNIT.read_text())["Environment"])
    assert "POLARS_SKIP_CPU_CHECK" in values  # the line that makes polars import under the rule
    return {**values, "MPLCONFIGDIR": str(tmp_path / "matplotlib")}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(db: Path, http_port: int, pg_port: int, env: dict[str, str]) -> Iterator[httpx.Client]:
    command = under_mdwe(
        *WANKA, "--db", str(db), "serve", "--http-port", str(http_port), "--pg-port", str(pg_port),
        "--refresh-interval-s", "0",
    )  # fmt: skip
    pipe, both = subprocess.PIPE, subprocess.STDOUT
    process = subprocess.Popen(
        command, cwd=REPO, env={**os.environ, **env}, stdout=pipe, stderr=both
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{http_port}", timeout=60)
    try:
        if not came_up(process, f"http://127.0.0.1:{http_port}/healthz"):
            process.kill()
            output = process.communicate()[0].decode(errors="replace")
            pytest.fail(f"wanka serve did not come up under the rule:\n{output[-3000:]}")
            time.sleep(0.05)  # polling for start-up, not timing anything
        yield client
    finally:
        client.close()
        if process.poll() is None:
            process.terminate()
        process.communicate(timeout=60)  # waits, and closes the pipe


@pytest.mark.usefixtures("mdwe")
def test_the_rule_is_real_polars_refuses_to_import_under_it_without_the_unit_line() -> None:
    """What the unit's POLARS_SKIP_CPU_CHECK=1 is for: polars' CPUID check maps a page
    executable, which the rule refuses (so the rule is in force in these tests)."""
    env = {k: v for k, v in os.environ.items() if k != "POLARS_SKIP_CPU_CHECK"}
    imported = subprocess.run(
        under_mdwe(sys.executable, "-c", "import polars"),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert imported.returncode != 0 and "mprotect" in imported.stderr, imported.stderr


@pytest.mark.usefixtures("mdwe")
def test_serve_answers_every_face_under_memory_deny_write_execute(
    tmp_path: Path, fresh_db: Path
) -> None:
    pg_port = free_port()
    with serving(fresh_db, free_port(), pg_port, unit_environment(tmp_path)) as client:
        sent = scrape(2, 2, ["DCGM_FI_DEV_GPU_UTIL"], TS_MS)
        written = client.post("/api/v1/write", content=sent, headers=WRITE_HEADERS)
        assert written.status_code == 204, written.text
        promql = client.get(
            "/api/v1/query",
            params={"query": "count(DCGM_FI_DEV_GPU_UTIL)", "time": TS_MS / 1000 + 30},
        )
        assert promql.json()["data"]["result"][0]["value"][1] == "4", promql.text
        sql = "SELECT count(*) AS samples, pcie_gbs(4, 16) AS gbs FROM gpu_metrics"
        answer = client.post("/v1/query", json={"sql": sql})
        assert answer.json()["rows"] == [[4, pytest.approx(31.5, rel=0.01)]], answer.text
        with psycopg.connect(
            host="127.0.0.1", port=pg_port, dbname="wanka", user="wanka", sslmode="disable"
        ) as conn:
            assert conn.execute("SELECT count(*) FROM gpu_metrics").fetchall() == [(4,)]
