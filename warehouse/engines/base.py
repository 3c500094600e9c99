"""The one interface every engine of wanka implements, over the same lake.

An engine registers the lake's tables and the model UDFs, runs DuckDB-dialect SQL (translating
it when its dialect differs), and commits results to the lake. Commits go through delta-rs for
every engine (`commit`), so the lake's atomicity and watermarks are the same whoever computed
the rows; an engine with a native Delta writer may say so in its capabilities.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from warehouse.lake import layout
from warehouse.lake.delta import TABLE_CONFIG, LakeTable, commit_properties


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, declared rather than discovered at 3 a.m."""

    name: str
    dialect: str  # sqlglot dialect of the SQL it runs
    distributed: bool  # runs past one machine
    duckdb_only_sql: bool  # ASOF JOIN, PIVOT, COLUMNS(), histogram() ... run as written
    native_delta_merge: bool  # MERGE INTO on Delta tables in its own SQL (needs Delta jars)
    task_written_files: bool  # its tasks write data files that one delta-rs commit adds


class LakeEngine(ABC):
    """An engine over a lake folder of Delta tables (see `warehouse.lake`)."""

    capabilities: Capabilities

    # -- tables and functions ------------------------------------------------------------------

    def register_lake(self, lake: Path) -> list[str]:
        """Register every Delta table of `lake` under its folder name; returns the names."""
        names = []
        for folder in sorted(p for p in lake.iterdir() if p.is_dir()):
            table = LakeTable(folder)
            if folder.name != layout.WANKA_DIR and table.exists:
                self.register_table(folder.name, table)
                names.append(folder.name)
        return names

    @abstractmethod
    def register_table(
        self, name: str, table: LakeTable, *, files: list[str] | None = None
    ) -> None:
        """Make `table` (its active files, or only `files` of them) queryable as `name`.

        The partition column `ts_day` is left out: the lake adds it, the SQL never names it.
        """

    @abstractmethod
    def register_udfs(self) -> list[str]:
        """Make every model function of `udfs/` callable from SQL; returns their names."""

    # -- SQL -------------------------------------------------------------------------------------

    @abstractmethod
    def sql(self, query: str, values: dict[str, object] | None = None) -> pa.Table:
        """Run a DuckDB-dialect query (translated for this engine) and return its rows.

        `values` bind the query's `$name` parameters (as literals: Spark has no such ones).
        """

    # -- commits ---------------------------------------------------------------------------------

    def commit(
        self,
        target: LakeTable,
        rows: pa.Table,
        *,
        mode: str,
        watermark: int,
        predicate: str | None = None,
        **metadata: object,
    ) -> None:
        """One Delta commit: append, overwrite, or overwrite the rows matching `predicate`.

        `watermark` is stored in the same commit (a Delta app transaction): re-running a
        refresh after a crash starts from the last commit that made it.
        """
        options: dict[str, Any] = {
            "mode": mode,
            "configuration": TABLE_CONFIG,
            "commit_properties": commit_properties(watermark, f"{mode}", **metadata),
        }
        if mode == "overwrite":
            options["predicate"] = predicate
            options["schema_mode"] = None if predicate else "overwrite"
        write_deltalake(str(target.path), rows, **options)

    def append(self, target: LakeTable, query: str, *, watermark: int) -> int:
        """Append the rows of `query` to `target` in one commit; returns the rows appended.

        This default computes the rows here and commits them from Arrow; an engine whose tasks
        write files (Spark) overrides it so that a large append never passes through one process.
        """
        rows = self.sql(query)
        self.commit(target, rows.cast(target.schema()), mode="append", watermark=watermark)
        return int(rows.num_rows)

    def close(self) -> None:  # noqa: B027 - most engines hold nothing to release
        """Release what the engine holds (connections, sessions)."""

    def __enter__(self) -> LakeEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
