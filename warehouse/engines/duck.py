"""DuckDB over the lake: the reference engine, reading the same Delta tables as Spark.

Tables are the Delta log's active files as Arrow datasets (delta-rs), no DuckDB extension; the
model functions are the same macros `warehouse.kernel.engine` installs. Used by `wanka sql --lake`
and as the side Spark's results are compared with.
"""

from __future__ import annotations

import threading

import pyarrow as pa

from udfs import registry
from warehouse.engines.base import Capabilities, LakeEngine
from warehouse.engines.portable import bind_literals
from warehouse.kernel.engine import connect_memory
from warehouse.lake.delta import PARTITION_COLUMN, LakeTable

CAPABILITIES = Capabilities(
    name="duckdb",
    dialect="duckdb",
    distributed=False,
    duckdb_only_sql=True,
    native_delta_merge=False,
    task_written_files=False,
)


class DuckLakeEngine(LakeEngine):
    """An in-memory DuckDB whose tables are the lake's Delta tables."""

    capabilities = CAPABILITIES

    def __init__(self) -> None:
        self.con = connect_memory()
        self._lock = threading.Lock()

    def register_table(
        self, name: str, table: LakeTable, *, files: list[str] | None = None
    ) -> None:
        """A view over the active files, read by DuckDB's own Parquet reader.

        (Much faster than scanning an Arrow dataset through Python; the Arrow dataset is used
        only for a table without files, to keep its columns.)
        """
        chosen = table.files() if files is None else files
        schema = table.schema()
        columns = ", ".join(f'"{c}"' for c in schema.names if c != PARTITION_COLUMN)
        with self._lock:
            if chosen:
                listed = ", ".join("'" + f.replace("'", "''") + "'" for f in chosen)
                source = f"read_parquet([{listed}], union_by_name = true)"
            else:
                self.con.register(f"__lake_{name}", schema.empty_table())
                source = f'"__lake_{name}"'
            self.con.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT {columns} FROM {source}')

    def register_udfs(self) -> list[str]:
        return registry.register(self.con)

    def sql(self, query: str, values: dict[str, object] | None = None) -> pa.Table:
        text = bind_literals(query, values) if values else query
        # on the connection itself: registered datasets are visible to it, not to cursors
        with self._lock:
            return self.con.sql(text).to_arrow_table()

    def close(self) -> None:
        self.con.close()
