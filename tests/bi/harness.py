"""What `make bi-check` stands on: a report of pass/fail steps, a `wanka serve` on the demo
warehouse, and a fresh Superset home (config file, metadata database, admin) made by
Superset's own CLI. Runs in `.venv-bi`, beside Superset; wanka runs as its own command."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class StepFailed(Exception):
    """A step's check did not hold; the message is the figure printed on its line."""


@dataclass
class Report:
    """One PASS/FAIL line per step as it ends, and the summary at the end."""

    width: int = 44
    results: list[tuple[str, bool]] = field(default_factory=list)

    def step(self, name: str, run: Callable[[], str]) -> bool:
        """Run one step: `run` returns its figure, or raises (StepFailed or anything else)."""
        started = time.perf_counter()
        try:
            figure, ok = run(), True
        except StepFailed as failed:
            figure, ok = str(failed), False
        except Exception as error:  # a step that crashes is a failed step, not a crashed check
            figure, ok = f"{type(error).__name__}: {error}", False
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.line(name, ok, f"{elapsed_ms:8.0f} ms  {figure}")
        return ok

    def skip(self, name: str, reason: str) -> None:
        """A step that could not run because one it needs failed: counted as failed."""
        self.line(name, False, f"{'-':>8}     not run: {reason}")

    def line(self, name: str, ok: bool, text: str) -> None:
        self.results.append((name, ok))
        flat = " ".join(text.split())
        print(f"{'PASS' if ok else 'FAIL'}  {name:<{self.width}} {flat}", flush=True)

    @property
    def passed(self) -> int:
        return sum(ok for _, ok in self.results)

    def summary(self) -> str:
        return f"{self.passed} of {len(self.results)} steps passed"


def free_port() -> int:
    """A loopback port nobody listens on now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Until `port` accepts a connection; fails early if `process` exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StepFailed(f"wanka serve exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.2)
    raise StepFailed(f"port {port} did not open in {timeout_s:.0f} s")


def run_logged(command: list[str], log: Path, **kwargs: Any) -> None:
    """Run a command with its output appended to `log`; a failure shows the log's tail."""
    with log.open("ab") as sink:
        done = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, **kwargs)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise StepFailed(f"{Path(command[0]).name} exited {done.returncode}: {' | '.join(tail)}")


@dataclass
class Wanka:
    """The `wanka` command on one warehouse file, and the server it starts."""

    command: list[str]
    db: Path
    log: Path
    user: str = "bi"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    pg_port: int = 0
    http_port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def cli(self, *args: str, stdin: str | None = None) -> None:
        run_logged(
            [*self.command, "--db", str(self.db), *args], self.log, input=stdin and stdin.encode()
        )

    def build_demo(self) -> str:
        if self.db.exists():
            return f"reused {self.db} ({self.db.stat().st_size / 2**20:,.0f} MiB)"
        self.db.parent.mkdir(parents=True, exist_ok=True)
        self.cli("demo", "--no-serve")
        return f"built {self.db} ({self.db.stat().st_size / 2**20:,.0f} MiB)"

    def serve(self) -> str:
        self.cli(
            "user",
            "add",
            self.user,
            "--role",
            "reader",
            "--password-stdin",
            stdin=self.password + "\n",
        )
        self.pg_port, self.http_port = free_port(), free_port()
        sink = self.log.open("ab")
        self.process = subprocess.Popen(
            [*self.command, "--db", str(self.db), "serve",
             "--http-port", str(self.http_port), "--pg-port", str(self.pg_port)],
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        sink.close()
        started = time.monotonic()
        wait_for_port(self.pg_port, self.process, timeout_s=120)
        return (
            f"pg port {self.pg_port} open after {time.monotonic() - started:.1f} s; "
            f"reader user {self.user!r}"
        )

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the reader, as a person types it into Superset."""
        return f"postgresql+psycopg2://{self.user}:{self.password}@127.0.0.1:{self.pg_port}/wanka"

    def stop(self) -> None:
        """SIGTERM to the server's own process group, SIGKILL after 15 s."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


CONFIG = '''\
"""Superset for `make bi-check`: a throwaway home, no network, API clients without CSRF."""
SECRET_KEY = {secret!r}
SQLALCHEMY_DATABASE_URI = "sqlite:///{home}/superset.db"
WTF_CSRF_ENABLED = False
TALISMAN_ENABLED = False
RATELIMIT_ENABLED = False
FEATURE_FLAGS = {{"ESTIMATE_QUERY_COST": True}}
SQLLAB_TIMEOUT = 120
SQLLAB_ASYNC_TIME_LIMIT_SEC = 120
SQLLAB_QUERY_COST_ESTIMATE_TIMEOUT = 60
DATA_CACHE_CONFIG = {{"CACHE_TYPE": "NullCache"}}
'''


@dataclass
class SupersetHome:
    """A Superset config file and SQLite metadata database under `home`."""

    home: Path
    admin: str = "admin"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))

    @property
    def config(self) -> Path:
        return self.home / "superset_config.py"

    @property
    def log(self) -> Path:
        return self.home / "superset.log"

    def write_config(self) -> None:
        self.config.write_text(CONFIG.format(secret=secrets.token_hex(32), home=self.home))
        os.environ["SUPERSET_CONFIG_PATH"] = str(self.config)
        os.environ["SUPERSET_HOME"] = str(self.home)

    def cli(self, *args: str) -> str:
        """Superset's own CLI (the `superset` script beside this interpreter)."""
        superset = Path(sys.executable).with_name("superset")
        run_logged([str(superset), *args], self.log, env=os.environ.copy())
        words = " ".join(a for a in args[:2] if not a.startswith("-"))
        return f"`superset {words}` ok"

    def create_admin(self) -> str:
        self.cli(
            "fab", "create-admin", "--username", self.admin, "--firstname", "bi",
            "--lastname", "check", "--email", "bi-check@example.invalid",
            "--password", self.password,
        )  # fmt: skip
        return f"admin {self.admin!r} created"


@contextlib.contextmanager
def quiet_into(log: Path) -> Iterator[None]:
    """Superset prints and logs freely while it starts: into `log`, not the report."""
    with log.open("a") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield
