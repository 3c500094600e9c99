"""A real Alertmanager 0.25 (Debian's `prometheus-alertmanager`) for the tests to send alerts
to and read them back from, through its own API."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.http.test_serve_process import came_up

BINARY = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
needs_alertmanager = pytest.mark.skipif(
    BINARY is None, reason="prometheus-alertmanager is not installed"
)

CONFIG = """\
route: {receiver: nowhere, group_wait: 1s}
receivers: [{name: nowhere}]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def alertmanager(folder: Path) -> Iterator[str]:
    """A running Alertmanager; its base URL."""
    assert BINARY is not None
    (folder / "am.yml").write_text(CONFIG)
    port = free_port()
    process = subprocess.Popen(
        [BINARY, f"--config.file={folder / 'am.yml'}", f"--storage.path={folder / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        if not came_up(process, f"{url}/-/ready", within_s=20):
            raise RuntimeError("Alertmanager did not come up")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def alerts(url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.get(f"{url}/api/v2/alerts", timeout=5).json()
    return found


def wait_for(url: str, check: Any, timeout_s: float = 15) -> list[dict[str, Any]]:
    """Alertmanager's alerts once `check(alerts)` holds (polled: the notifier sends on its own
    thread); AssertionError with the last seen when it does not in time."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = alerts(url)
        if check(found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"Alertmanager holds {found}")
        time.sleep(0.1)
