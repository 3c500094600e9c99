"""An in-memory DuckDB for constants and parsing: no file, no access out, one thread.

Rewrites of a statement before it runs ask DuckDB what it makes of a piece of SQL: the width
of an INTERVAL (`warehouse.tsdb.buckets`), the names of a SELECT's columns
(`warehouse.tsdb.names`). They ask this database, not the warehouse's: nothing there is read.
"""

from __future__ import annotations

import threading
from functools import cache

import duckdb

from warehouse.kernel.engine import BASE_CONFIG

_local = threading.local()


@cache
def _database() -> duckdb.DuckDBPyConnection:
    return duckdb.connect(
        ":memory:", config={**BASE_CONFIG, "threads": 1, "enable_external_access": False}
    )


def cursor() -> duckdb.DuckDBPyConnection:
    """This thread's cursor of the scratch database."""
    found: duckdb.DuckDBPyConnection | None = getattr(_local, "cursor", None)
    if found is None:
        found = _database().cursor()
        _local.cursor = found
    return found
