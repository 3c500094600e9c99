"""Start a real `wanka serve` for a benchmark, and the CLI calls that prepare its database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
WANKA = [sys.executable, "-c", "from service.cli import main; main()"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wanka(db: str, *args: str, stdin: str | None = None) -> None:
    """Run a `wanka` command on `db` (e.g. `user add`), failing loudly."""
    subprocess.run(
        [*WANKA, "--db", db, *args], input=stdin, text=True, check=True, cwd=REPO,
        capture_output=True,
    )  # fmt: skip


def start_server(db: str, *options: str) -> tuple[subprocess.Popen[bytes], str]:
    """`wanka serve` on a free HTTP port with `options`; (process, URL) once /healthz answers.
    It logs warnings and errors only (its stderr is the benchmark's)."""
    port = free_port()
    command = [*WANKA, "--db", db, "serve", "--http-port", str(port), "--log-level", "warning"]
    command += options
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    wait_ready(process, f"{url}/healthz", "wanka serve")
    return process, url


def wait_ready(process: subprocess.Popen[bytes], url: str, what: str, within_s: float = 60) -> None:
    """Return once `url` answers 200; kill `process` and stop the benchmark if it never does."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # polling for start-up, not timing anything
    process.kill()
    raise SystemExit(f"{what} did not start")
