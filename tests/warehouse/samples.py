"""Hand-made telemetry for tests: gpu_metrics rows written with one SQL INSERT.

The rows go in as a person's `INSERT INTO gpu_metrics (...) VALUES (...), ...` would, through
`warehouse.query.executor.execute` and so the view's DML rewrite (`warehouse.tsdb.dml`): one
statement, one batch id. Here the statement's text is built once, instead of in each test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import duckdb

from warehouse.query.executor import execute

#: When hand-made samples start.
START = datetime(2026, 11, 1, tzinfo=UTC)


def minute(n: float) -> datetime:
    """`n` minutes after START.

    >>> minute(90).isoformat()
    '2026-11-01T01:30:00+00:00'
    """
    return START + timedelta(minutes=n)


def insert_samples(cur: duckdb.DuckDBPyConnection, rows: Sequence[Mapping[str, object]]) -> None:
    """Write `rows` (column name -> value; every row names the same columns) into gpu_metrics
    with one parameterised INSERT; nothing for no rows."""
    if not rows:
        return
    columns = list(rows[0])
    if any(list(row) != columns for row in rows):
        raise ValueError(f"every row must name the columns {columns}, in that order")
    one = f"({', '.join('?' for _ in columns)})"
    sql = f"INSERT INTO gpu_metrics ({', '.join(columns)}) VALUES {', '.join(one for _ in rows)}"
    execute(cur, sql, [row[c] for row in rows for c in columns]).read_all()
