"""`wanka.refresh_history`: one row per refresh, succeeded or failed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb


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
