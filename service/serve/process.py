"""What /metrics says of the process itself: what it was built from, and when it started."""

from __future__ import annotations

import functools
import os
import subprocess
import time
from importlib import metadata
from pathlib import Path


@functools.cache
def build_info() -> tuple[tuple[str, str], ...]:
    """The labels of `wanka_build_info`: version, revision (git's, when known) and duckdb."""
    return (
        ("duckdb", _version("duckdb")),
        ("revision", _revision()),
        ("version", _version("wanka")),
    )


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def _revision() -> str:
    """$WANKA_REVISION (a package build sets it), else the checkout's git commit, else
    'unknown' (an installed wheel outside a checkout)."""
    given = os.environ.get("WANKA_REVISION")
    if given:
        return given
    here = Path(__file__).resolve().parent
    try:
        found = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else "unknown"


@functools.cache
def start_time() -> float:
    """When this process started, in seconds since the epoch: from /proc (as Prometheus's Go
    and Python clients read it), else the first time this is asked."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rpartition(")")[2].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()
