"""GPU events kept at ingest: XID errors, ECC and remapped-row increases, remap failures,
throttling and NVLink errors, from the DCGM gauges and counters a batch of telemetry carries.

dcgm-exporter reports state, not events (its XID field is the last code seen, its ECC fields are
counters), so an event is a change between a sample and the one before it of the same GPU and
field; the rules are SQL in sql/health/gpu_events.sql. Both telemetry paths (`warehouse.telemetry`
for ingest, `warehouse.remote_write.store`) call `note` in their transaction, so the events of a
batch are stored with it, once: a delivery stored again adds no samples and so no events.
"""

from __future__ import annotations

import functools

import duckdb

from warehouse.catalog import sql_dir

#: A non-zero XID gauge holding the same code this long without a sample is a new event.
REPEAT_GAP_S = 3600
#: How far back the sample before a batch is looked for (a GPU silent longer starts afresh).
LOOKBACK_S = 6 * 3600


@functools.cache
def _template() -> str:
    return (sql_dir() / "health" / "gpu_events.sql").read_text(encoding="utf-8")


def events_sql(batches: str) -> str:
    """The SELECT of the events the batches `batches` (a SQL list or subquery of ids) show."""
    return _template().format(batches=batches, repeat_gap_s=REPEAT_GAP_S, lookback_s=LOOKBACK_S)


def note(cur: duckdb.DuckDBPyConnection, batches: str) -> int:
    """Store the events of the telemetry batches `batches`; how many."""
    written = cur.execute(
        "INSERT INTO gpu_events (ts, host, gpu, uuid, kind, code, detail, metric, value, batch_id) "
        f"SELECT ts, host, gpu, uuid, kind, code, detail, metric, value, batch_id "
        f"FROM ({events_sql(batches)})"
    ).fetchall()
    return int(written[0][0])
