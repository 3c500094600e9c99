"""Shared fixtures: fresh databases, the real data folder, running the CLI."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Protocol, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from tests.warehouses import Warehouses

REPO = Path(__file__).resolve().parents[1]

Ex = TypeVar("Ex")

#: Hypothesis profiles, by examples per property test: `$HYPOTHESIS_PROFILE` picks one, `ci` (what
#: `make test` runs) when unset; `dev` for a quick look while editing, `thorough` for a long run.
#: Property tests check what an input does, not how fast: on a loaded 2-core CI machine a
#: per-example deadline only makes them flaky, so no profile has one.
PROFILES = {"dev": 20, "ci": 100, "thorough": 1000}
PROFILE_ENV = "HYPOTHESIS_PROFILE"
for _name, _examples in PROFILES.items():
    settings.register_profile(_name, max_examples=_examples, deadline=None)
settings.load_profile(os.environ.get(PROFILE_ENV) or "ci")


def examples(share: float) -> int:
    """A property test's examples, as a share of the profile's: a test whose example costs a
    fresh warehouse takes a fraction, a cheap parser test a multiple, and all of them scale
    together when the profile changes.

    >>> examples(0.25) == round(settings().max_examples / 4)
    True
    """
    return max(1, round(settings().max_examples * share))


class Draw(Protocol):
    """Draws a value from a strategy: `st.DataObject.draw` or the `draw` of a `@st.composite`.

    `st.DrawFn` would do but for its `__signature__` member, which a bound `data.draw` lacks.
    """

    def __call__(self, strategy: st.SearchStrategy[Ex], /) -> Ex: ...


def shared_data_dir() -> Path:
    """`$WANKA_SHARED_DATA`, else ../shared/data beside the checkout."""
    return Path(os.environ.get("WANKA_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public samples; missing is a failure under CI=true and a skip elsewhere."""
    folder = shared_data_dir()
    if not (folder / "MANIFEST.md").is_file():
        message = f"real data folder {folder} is missing (set WANKA_SHARED_DATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return folder


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where a test's own database goes; nothing is there yet (`wanka` or `Engine` makes it)."""
    return tmp_path / "w.duckdb"


@pytest.fixture(scope="session")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Warehouses:
    """An empty migrated warehouse and the demo clusters, each built once per run and copied
    for the tests that use them (tests/warehouses.py)."""
    return Warehouses(tmp_path_factory)


@pytest.fixture
def cli_db(tmp_path: Path, warehouses: Warehouses) -> Path:
    """A new warehouse at `tmp_path / "w.duckdb"` as the first `wanka` command leaves one, the
    shipped dynamic tables installed (a copy: the first open costs a command ~1 s)."""
    return warehouses.empty(tmp_path / "w.duckdb", shipped=True)


@pytest.fixture
def fresh_db(tmp_path: Path, warehouses: Warehouses) -> Path:
    """A new, empty warehouse of the test's own at `tmp_path / "w.duckdb"` (a copy, not a
    migration)."""
    return warehouses.empty(tmp_path / "w.duckdb")


def run_wanka(
    *args: str, input: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `wanka` command as a user would, in a subprocess: for the few tests that need a
    process of its own (a first start, a server, what only the process's own stderr shows).
    Every other test calls `invoke_wanka`, ~1 s quicker a call."""
    command = [sys.executable, "-c", "from service.cli import main; main()", *args]
    return subprocess.run(
        command,
        input=input,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd or REPO,
        timeout=600,
    )


def invoke_wanka(
    *args: str, input: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `wanka` command in this process, as `run_wanka` does in a subprocess: the same
    arguments, exit status, stdout and stderr, without a new interpreter importing wanka.

    The command runs through `service.cli.main`, so its errors become the exit status and the
    one line on stderr they do for a user. Click's CliRunner gives it its own stdin, stdout,
    stderr and environment variables for the call; the working folder is changed, and changed
    back, here. An exception main() lets through ends the call as it would the process: its
    traceback on stderr, exit status 1.
    """
    from click.testing import CliRunner

    from service.cli import main

    here = Path.cwd()
    with CliRunner().isolation(input=input, env=env) as (stdout, stderr, _both):
        os.chdir(cwd or REPO)
        try:
            main(list(args))
            status = 0
        except SystemExit as stopped:
            status = _exit_status(stopped.code)
        except Exception:
            traceback.print_exc()
            status = 1
        finally:
            os.chdir(here)
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = stdout.getvalue().decode(), stderr.getvalue().decode()
    return subprocess.CompletedProcess(["wanka", *args], status, out, err)


def _exit_status(code: object) -> int:
    """The exit status `sys.exit(code)` gives a process (a message is printed, and is 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


# -- nothing left behind ---------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, str]]:
    """Every process on the machine: pid -> (parent pid, command line)."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended while we looked
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        found[int(entry.name)] = (parent, command.strip())
    return found


def leftover_processes(root: Path, me: int) -> dict[int, str]:
    """Processes a test run started and did not stop: descendants of `me`, and any process
    whose command line names a path under `root` (the run's temporary folders; a server
    whose parent exited is reparented to init, so the command line is what still ties it to
    the run)."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _command) in table.items():
        children.setdefault(parent, []).append(pid)
    found: dict[int, str] = {}
    stack = list(children.get(me, []))
    while stack:
        pid = stack.pop()
        found[pid] = table[pid][1]
        stack.extend(children.get(pid, []))
    for pid, (_parent, command) in table.items():
        if pid != me and str(root) in command:
            found[pid] = command
    return found


@pytest.hookimpl(trylast=True)  # after pytest-xdist has stopped its workers
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A test run leaves no process behind: one still running at the end fails the run.

    Checked once, by the process that started the run (the xdist controller); what it finds is
    listed and then stopped, so the next run starts clean either way.
    """
    if hasattr(session.config, "workerinput"):
        return
    root = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    left = leftover_processes(root, os.getpid())
    while left and time.monotonic() < deadline:  # a server may still be shutting down
        time.sleep(0.2)
        left = leftover_processes(root, os.getpid())
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{len(left)} process(es) outlived the test run:"]
    lines += [f"  pid {pid}: {command[:200]}" for pid, command in sorted(left.items())]
    if reporter is not None:
        reporter.write_line("\n".join(lines), red=True, bold=True)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
