"""Warehouse files for tests, built once per run and copied: an empty migrated warehouse for
the tests that want a fresh one, with or without the shipped dynamic tables a `Server` adds.

A new file costs its migration and reference loads (0.2-0.4 s on a loaded 2-core machine), and
a `Server` over it seconds more to install and refresh the shipped dynamic tables; a copy of one
already made opens in a fraction of that. The built files are made the way a test made its own
(`Engine` on a new path, then `ensure_shipped` as `Server` does), so a copy is the file the test
would have made; `tests/test_warehouses.py` holds them to it. Tests of migration itself, and of
what a first open does, still open new files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.demo_clusters import DemoCluster
from tests.run_files import build_once, copy_to, run_folder
from warehouse.demo import build_demo
from warehouse.dynamic.shipped import ensure_shipped
from warehouse.kernel.engine import Engine

#: A RAM-backed folder, and the room it must have to be used (a container's is often 64 MB).
RAM = Path("/dev/shm")
RAM_NEEDED = 1 << 30


def _new_warehouse(path: Path) -> None:
    Engine(str(path)).close()


def _new_served_warehouse(path: Path) -> None:
    with Engine(str(path)) as engine:
        ensure_shipped(engine)


class Warehouses:
    """The run's built warehouse files (the `warehouses` fixture); each test copies one."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory

    def empty(self, path: Path, *, shipped: bool = False) -> Path:
        """A new warehouse at `path`: schema at the latest version, reference tables loaded, as
        `Engine` leaves a new file; `shipped`, also with the shipped dynamic tables, as `Server`
        (`wanka serve`) and every `wanka` command that writes leave one (seconds more to make).
        """
        if shipped:
            built = build_once(self._factory, "empty-shipped.duckdb", _new_served_warehouse)
        else:
            built = build_once(self._factory, "empty.duckdb", _new_warehouse)
        return copy_to(built, path)

    @contextmanager
    def scratch(self) -> Iterator[Path]:
        """A folder of the caller's own, deleted after, in memory where the machine has room
        (/dev/shm): for the files that stand in for `:memory:`. DuckDB syncs a file's log at
        every commit; on a disk, a fixture of 2,048 one-row inserts took 7 s instead of 2."""
        roomy = RAM.is_dir() and shutil.disk_usage(RAM).free >= RAM_NEEDED
        where = RAM if roomy and os.access(RAM, os.W_OK) else run_folder(self._factory)
        with tempfile.TemporaryDirectory(dir=where, prefix="wanka-test-") as folder:
            yield Path(folder)

    @contextmanager
    def engine(self) -> Iterator[Engine]:
        """An engine over a new warehouse of its own, deleted after: where a test, or each
        example of a property test, would open `:memory:`."""
        with self.scratch() as folder, Engine(str(self.empty(folder / "w.duckdb"))) as engine:
            yield engine

    def demo(self, cluster: DemoCluster, path: Path, real_data: Path | None = None) -> Path:
        """The demo of `cluster` at `path` (with the real samples of `real_data` when the cluster
        takes them; pass the `shared_data` fixture, which skips or fails where they are missing).
        """
        if cluster.real_data and real_data is None:
            raise ValueError(f"the {cluster.name} demo holds the real samples: pass real_data")

        def build(target: Path) -> None:
            with Engine(str(target)) as engine:
                build_demo(engine, cluster.config, real_data=real_data)

        return copy_to(build_once(self._factory, f"demo-{cluster.name}.duckdb", build), path)
