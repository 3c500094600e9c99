"""GPU events kept at ingest: XID errors, ECC and remapped-row increases, remap failures,
throttling and NVLink errors, from the DCGM gauges and counters a batch of telemetry carries.

dcgm-exporter reports state, not events (its XID field is the last code seen, its ECC fields are
counters), so an event is a change between a sample and the one before it of the same GPU and
field; the rules are SQL in sql/health/gpu_events.sql. Every telemetry write calls `note` in its
transaction once its batch is whole (`warehouse.telemetry.insert`, or an ingest after its last
chunk; `warehouse.remote_write.store` per group commit), so the events of a batch are stored
with it, once: a delivery stored again adds no samples and so no events. The sample before a
batch comes from wanka.gpu_event_state, which each `note` moves on.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import duckdb

from warehouse.catalog import sql_dir

#: A non-zero XID gauge holding the same code this long without a sample is a new event.
REPEAT_GAP_S = 3600
#: How far back the sample before a batch is looked for (a GPU silent longer starts afresh).
LOOKBACK_S = 6 * 3600


@functools.cache
def _template(name: str) -> str:
    return (sql_dir() / "health" / f"{name}.sql").read_text(encoding="utf-8")


def events_sql(batches: str) -> str:
    """The SELECT of the events the batches `batches` (a SQL list of ids) show."""
    return _template("gpu_events").format(
        batches=batches, repeat_gap_s=REPEAT_GAP_S, lookback_s=LOOKBACK_S
    )


def note(cur: duckdb.DuckDBPyConnection, batch_ids: Sequence[int]) -> int:
    """Store the events of the telemetry batches `batch_ids` and move wanka.gpu_event_state on;
    how many events. The ids are constants in the SQL, so its scans of gpu_samples skip every
    older row group (zone maps)."""
    if not batch_ids:
        return 0
    listed = ", ".join(str(int(b)) for b in sorted(set(batch_ids)))
    written = cur.execute(
        "INSERT INTO gpu_events (ts, host, gpu, uuid, kind, code, detail, metric, value, batch_id) "
        f"SELECT ts, host, gpu, uuid, kind, code, detail, metric, value, batch_id "
        f"FROM ({events_sql(listed)})"
    ).fetchall()
    cur.execute(_template("gpu_event_state").format(batches=listed))
    return int(written[0][0])
