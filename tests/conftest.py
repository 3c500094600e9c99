"""Shared fixtures: fresh databases, the real data folder, running the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]

# Property tests check what an input does, not how fast: on a loaded 2-core CI machine a
# per-example deadline only makes them flaky. Tests that need a different budget say so.
settings.register_profile("wanka", deadline=None)
settings.load_profile("wanka")


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
    return tmp_path / "w.duckdb"


def run_wanka(
    *args: str, input: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `wanka` command as a user would, in a subprocess."""
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
