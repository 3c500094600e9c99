"""`wanka.refresh_history`: one row per refresh, succeeded or failed; and what a failure sets.

Every refresh — `REFRESH DYNAMIC TABLE` from any SQL face, `wanka refresh`, the HTTP endpoint
and the scheduler — ends here the same way: a success is recorded inside the refresh's own
transaction (`record`), a failure in the transaction its rollback handler opens
(`record_failure`): the table's state, error, failure count and next attempt (backoff), every
table reading it marked `upstream_failed`, and the history row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb

from warehouse.kernel.transactions import transaction

BACKOFF_BASE_S = 30.0
BACKOFF_CAP_S = 3600.0


@dataclass
class RefreshResult:
    """What one refresh did."""

    name: str
    refresh_mode: str  # 'incremental' | 'full' | 'no_data'
    reason: str | None
    rows_inserted: int
    rows_deleted: int
    started_at: datetime
    data_timestamp: datetime | None
    state: str = "succeeded"
    error: str | None = None


@dataclass(frozen=True)
class Failure:
    """What a failed refresh left recorded."""

    failures: int  # in a row, this one included
    next_attempt_at: datetime  # the scheduler does not retry before


def backoff(failures: int) -> timedelta:
    """How long to wait before retrying after `failures` failures in a row.

    >>> backoff(1).total_seconds(), backoff(3).total_seconds(), backoff(20).total_seconds()
    (30.0, 120.0, 3600.0)
    """
    return timedelta(seconds=min(BACKOFF_BASE_S * 2 ** max(failures - 1, 0), BACKOFF_CAP_S))


def record(con: duckdb.DuckDBPyConnection, result: RefreshResult) -> None:
    """Append the refresh to wanka.refresh_history (inside the caller's transaction, if any)."""
    con.execute(
        "INSERT INTO wanka.refresh_history (name, started_at, finished_at, refresh_mode, "
        "refresh_mode_reason, rows_inserted, rows_deleted, data_timestamp, state, error) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            result.name,
            result.started_at,
            datetime.now(UTC),  # not now(): in SQL that is when the transaction began
            result.refresh_mode,
            result.reason,
            result.rows_inserted,
            result.rows_deleted,
            result.data_timestamp,
            result.state,
            result.error,
        ],
    )


#: Every dynamic table that reads $name, directly or through others.
_READERS = (
    "WITH RECURSIVE readers(name) AS ("
    "SELECT name FROM wanka.dynamic_tables WHERE list_contains(sources, $name) "
    "UNION SELECT d.name FROM wanka.dynamic_tables d JOIN readers r "
    "ON list_contains(d.sources, r.name)) SELECT name FROM readers"
)


def record_failure(
    con: duckdb.DuckDBPyConnection,
    name: str,
    started: datetime,
    mode: str,
    message: str,
    now: datetime | None = None,
) -> Failure:
    """Record a refresh of `name` that failed and was rolled back, in a transaction of its own.

    The next attempt is `now` (the scheduler's clock; by default the wall clock) + backoff.
    """
    now = now or datetime.now(UTC)
    with transaction(con):
        rows = con.execute(
            "SELECT coalesce(failures, 0) + 1 FROM wanka.dynamic_tables WHERE name = ?", [name]
        ).fetchall()
        failures = int(rows[0][0]) if rows else 1
        failure = Failure(failures, now + backoff(failures))
        con.execute(
            "UPDATE wanka.dynamic_tables SET state = 'failed', error = ?, failures = ?, "
            "next_attempt_at = ? WHERE name = ?",
            [message, failure.failures, failure.next_attempt_at, name],
        )
        con.execute(
            f"UPDATE wanka.dynamic_tables SET state = 'upstream_failed', error = $why "
            f"WHERE name IN ({_READERS})",
            {"name": name, "why": f"upstream dynamic table {name} failed"},
        )
        record(con, RefreshResult(name, mode, None, 0, 0, started, None, "failed", message))
    return failure
