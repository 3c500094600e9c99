"""Files a test run builds once and all its xdist workers share.

Building a warehouse costs seconds (a migration ~0.3 s, a demo several); copying the built file
costs milliseconds. So the first worker to ask for a file builds it, holding a lock, into the
run's own folder; the others wait on the lock and then use what it built. Callers copy the file
before changing it: the built one stays as it was built.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def run_folder(factory: pytest.TempPathFactory) -> Path:
    """The folder this whole run shares: the parent of a worker's base folder under xdist
    (`pytest-N/popen-gw0` -> `pytest-N`), else the base folder itself. Both are new each run,
    so nothing built by an earlier run, with earlier code, is found there."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The file `name` of this run, made by `build(path)` by the first worker that asks.

    `build` writes to a scratch path that is renamed into place when it returns, so a worker
    never sees half a file, and a build that fails leaves nothing behind for the next to trust.
    """
    folder = run_folder(factory) / "built-once"
    folder.mkdir(exist_ok=True)
    target = folder / name
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not target.exists():
            scratch = folder / f"{name}.scratch" / name  # a folder of its own: a WAL would show
            shutil.rmtree(scratch.parent, ignore_errors=True)
            scratch.parent.mkdir()
            build(scratch)
            leftovers = [p.name for p in scratch.parent.iterdir() if p != scratch]
            assert not leftovers, f"building {name} left {leftovers} beside it"
            os.replace(scratch, target)
            scratch.parent.rmdir()
    return target


def copy_to(built: Path, path: Path) -> Path:
    """A copy of a built file at `path`, for a test to change."""
    shutil.copyfile(built, path)
    return path
