"""A throwaway real PostgreSQL server for side-by-side tests and the benchmark.

initdb into a temporary folder and start `postgres` on a free port with its unix socket in that
folder. As root, the server runs as the `postgres` user (or `nobody`), because PostgreSQL refuses
to run as root. `find_binaries()` is None when PostgreSQL is not installed.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def find_binaries() -> Path | None:
    """The folder holding initdb and postgres, or None."""
    initdb = shutil.which("initdb")
    candidates = [Path(initdb).resolve().parent] if initdb else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "postgres").exists():
            return folder
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RealPostgres:
    """A running PostgreSQL server: trust authentication on 127.0.0.1."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes]

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user=postgres sslmode=disable"

    def stop(self) -> None:
        """Stop the postmaster itself and wait until it is gone.

        As root the server runs under `su`, and signalling `su` does not reach the postmaster:
        it stayed behind, reparented to init, after every test run. So the postmaster's own
        pid (from postmaster.pid) gets SIGTERM (PostgreSQL's "smart" shutdown would wait for
        clients; SIGINT is "fast": it disconnects them), then SIGKILL if it lingers.
        """
        pid = postmaster_pid(self.folder / "data")
        if pid is not None:
            _signal_until_gone(pid, signal.SIGINT, wait_s=20)
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)


def postmaster_pid(data: Path) -> int | None:
    """The postmaster's pid from the first line of `data/postmaster.pid`, if it is running."""
    try:
        return int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _signal_until_gone(pid: int, sig: signal.Signals, *, wait_s: float) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)  # waiting for a shutdown to finish, not timing anything
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _as_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        quoted = " ".join("'" + part.replace("'", "'\\''") + "'" for part in command)
        return ["su", name, "-s", "/bin/sh", "-c", quoted]
    raise RuntimeError("running as root and neither user postgres nor nobody exists")


def _owner() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    return None


def start(folder: Path, binaries: Path, *, wait_s: float = 60.0) -> RealPostgres:
    """initdb + postgres in `folder`; returns once it accepts connections."""
    folder.mkdir(parents=True, exist_ok=True)
    owner = _owner()
    if owner is not None:
        os.chown(folder, *owner)
        for parent in list(folder.parents)[:3]:  # the server user must reach its folder
            os.chmod(parent, os.stat(parent).st_mode | 0o011)
    data = folder / "data"
    subprocess.run(
        _as_user(
            [
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ]
        ),
        check=True,
        capture_output=True,
    )
    port = free_port()
    command = [
        str(binaries / "postgres"),
        "-D",
        str(data),
        "-p",
        str(port),
        "-k",
        str(folder),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
        "-c",
        "TimeZone=UTC",
        "-c",
        "max_connections=200",
    ]
    log = open(folder / "postgres.log", "wb")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(_as_user(command), stdout=log, stderr=subprocess.STDOUT)
    server = RealPostgres(folder, port, process)
    deadline = time.monotonic() + wait_s
    while True:  # readiness, not timing: poll until the socket answers
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((folder / "postgres.log").read_text()) from None
            time.sleep(0.05)
    import psycopg

    while True:
        try:
            psycopg.connect(server.dsn(), connect_timeout=2).close()
            return server
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
