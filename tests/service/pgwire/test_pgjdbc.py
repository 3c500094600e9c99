"""pgjdbc, the JDBC driver of DBeaver, Metabase and Tableau, against the endpoint (Java)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.service.pgwire.conftest import PASSWORD, Served

PROBE = Path(__file__).parent / "jdbc" / "JdbcProbe.java"


def _driver_jar() -> str | None:
    found = os.environ.get("PGJDBC_JAR") or next(
        iter(
            sorted(
                glob.glob(os.path.expanduser("~/.m2/repository/org/postgresql/postgresql/*/*.jar"))
            )
        ),
        None,
    )
    return found if found and Path(found).is_file() else None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")
@pytest.mark.skipif(_driver_jar() is None, reason="pgjdbc jar not found (set PGJDBC_JAR)")
def test_pgjdbc_metadata_fetch_size_and_parameters(served: Served) -> None:
    url = f"jdbc:postgresql://127.0.0.1:{served.port}/wanka?sslmode=disable"
    done = subprocess.run(
        ["java", "-cp", str(_driver_jar()), str(PROBE), url, "reader", PASSWORD],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.splitlines()
    assert out[0] == "product PostgreSQL 15.0"
    assert "schema public" in out and "schema wanka" in out
    assert "column host text 12 NO" in out and "column installed_at timestamptz 93 YES" in out
    assert "pk host nodes_pkey" in out and "index nodes_pkey" in out
    assert "fetched 6000 sum 2997000" in out  # 6 runs: the last ones server-prepared
    assert "types 2024-03-01T12:00:00Z 12.345 true 2024-03-01" in out
