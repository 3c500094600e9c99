"""Faults during an ingest: the process killed mid-batch, the disk full. Nothing half-written.

Each test drives the real `wanka` command in a child process, then opens the database again
and checks what a person relies on: every batch that was acknowledged is there whole, the
interrupted one left no row behind, and the same file can be ingested again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.simulate.formats import write_formats

WANKA = [sys.executable, "-c", "import sys; from service.cli import main; main()"]


def wanka(db: Path, *args: str, **run: object) -> subprocess.CompletedProcess[str]:
    cmd = [*WANKA, "--db", str(db), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **run)  # type: ignore[call-overload,no-any-return]


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """DCGM exporter text of a small simulated cluster: several files of a few MB."""
    out = tmp_path_factory.mktemp("prom")
    cluster = simulate_cluster(SimConfig(gpus=256, hours=0.5, interval_s=30, seed=5))
    return write_formats(cluster, out, kinds=("dcgm",), max_rows=60_000)["dcgm"]


def batches(db: Path) -> list[tuple[int, int]]:
    with Engine(str(db)) as eng:
        return eng.con.execute(
            "SELECT batch_id, rows FROM wanka.ingest_batches ORDER BY batch_id"
        ).fetchall()


def consistent(db: Path) -> dict[int, int]:
    """gpu_metrics rows per batch equal what each batch recorded; returns them."""
    with Engine(str(db)) as eng:
        held = dict(
            eng.con.execute("SELECT batch_id, count(*) FROM gpu_metrics GROUP BY ALL").fetchall()
        )
        recorded = dict(
            eng.con.execute(
                "SELECT batch_id, rows FROM wanka.ingest_batches WHERE source_format = 'dcgm'"
            ).fetchall()
        )
    assert held == {b: n for b, n in recorded.items() if n}, (held, recorded)
    return held


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from warehouse.ingest import batch
    real = batch._store
    seen = []

    def store_then_die(*args, **kwargs):
        real(*args, **kwargs)
        seen.append(1)
        if len(seen) == 2:  # rows of this batch are written, its transaction still open
            os.kill(os.getpid(), signal.SIGKILL)

    batch._store = store_then_die
    from service.cli import main
    sys.argv = ["wanka", "--db", sys.argv[1], "ingest", "dcgm", sys.argv[2]]
    main()
    """
)


def test_killed_mid_ingest_leaves_no_partial_batch(tmp_path: Path, prom: list[Path]) -> None:
    db = tmp_path / "w.duckdb"
    done = wanka(db, "ingest", "dcgm", str(prom[0]))
    assert done.returncode == 0, done.stderr
    before = consistent(db)
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, str(db), str(prom[1])],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr
    # the acknowledged batch whole, nothing of the killed one
    assert before and consistent(db) == before
    again = wanka(db, "ingest", "dcgm", str(prom[1]))
    assert again.returncode == 0, again.stderr
    assert "already ingested" not in again.stdout  # the killed attempt recorded nothing
    after = consistent(db)
    assert len(after) == 2 and before.items() <= after.items()


@contextlib.contextmanager
def small_disk(path: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of `megabytes` at `path` (root only): a disk that fills up."""
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        message = f"cannot mount a tmpfs here ({mounted.stderr.strip()})"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mount") is None, reason="no mount command")
def test_a_full_disk_fails_the_ingest_clearly_and_keeps_the_database(
    tmp_path: Path, prom: list[Path]
) -> None:
    with small_disk(tmp_path / "disk", 6) as disk:  # every file needs ~10 MB (0012)
        db = disk / "w.duckdb"
        first = wanka(db, "ingest", "dcgm", str(prom[-1]))  # the small last file fits
        assert first.returncode == 0, first.stderr
        before = consistent(db)
        # every file at once: more than the disk holds
        full = wanka(db, "ingest", "dcgm", *map(str, prom))
        assert full.returncode == 1  # the system failed, not the input
        lines = full.stderr.strip().splitlines()
        assert lines and lines[-1].startswith("wanka: error:"), full.stderr
        assert "Traceback" not in full.stderr
        assert "space" in full.stderr.lower(), full.stderr
        # the database opens, what was acknowledged is whole, the failed batch left nothing
        held = consistent(db)
        assert before.items() <= held.items()
        for batch_id, n in batches(db):
            assert held.get(batch_id, 0) == n
