"""node_signals: the evidence of node_risk, derived in the transaction of the ingest, the
remote_write group or the scrape round that brought it (sql/faults/node_signals.sql), so that
node_risk refreshes from one tracked table.

Rows written to node_faults, jobs or gpu_events by SQL DML are not seen here until `rebuild`
runs: `wanka refresh --signals` (service/commands/refresh.py) runs it in one transaction before
refreshing (`wanka refresh node_risk --full` alone reads node_signals as it is).
"""

from __future__ import annotations

from functools import cache

import duckdb

from warehouse.kernel import catalog

#: The tables whose new rows may carry evidence.
SOURCES = frozenset({"node_faults", "jobs", "gpu_metrics", "gpu_events"})


@cache
def _insert_sql() -> str:
    return (catalog.sql_dir() / "faults" / "node_signals.sql").read_text(encoding="utf-8")


def after_ingest(cur: duckdb.DuckDBPyConnection, batch_id: int, tables: set[str]) -> None:
    """Add the evidence batch `batch_id` brought, when it wrote a table that carries some."""
    if tables & SOURCES:
        cur.execute(_insert_sql(), {"batch_id": batch_id})


def after_telemetry(cur: duckdb.DuckDBPyConnection, batch_id: int) -> None:
    """Add the evidence of the GPU events a telemetry batch (remote_write, a scrape round)
    showed: `then` of its append, in its transaction."""
    after_ingest(cur, batch_id, {"gpu_events"})


def rebuild(cur: duckdb.DuckDBPyConnection) -> int:
    """Derive node_signals again from every batch of its sources, and the thermal residuals
    from the hourly tier (warehouse/faults/thermal.py); the rows it now holds."""
    from warehouse.faults import thermal

    cur.execute("DELETE FROM node_signals")
    batches = cur.execute(
        "SELECT DISTINCT batch_id FROM node_faults UNION SELECT DISTINCT batch_id FROM jobs "
        "UNION SELECT DISTINCT batch_id FROM gpu_events ORDER BY 1"
    ).fetchall()
    for (batch_id,) in batches:
        if batch_id is not None:
            cur.execute(_insert_sql(), {"batch_id": batch_id})
    thermal.derive(cur, again=True)
    found = cur.execute("SELECT count(*) FROM node_signals").fetchone()
    return int(found[0]) if found else 0
