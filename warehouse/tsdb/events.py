"""GPU events kept at ingest: XID errors, ECC and remapped-row increases, remap failures,
throttling and NVLink errors, from the DCGM gauges and counters a batch of telemetry carries,
and GPUs that fell silent while the fleet reported (sql/health/gpu_silence.sql).

dcgm-exporter reports state, not events (its XID field is the last code seen, its ECC fields are
counters), so an event is a change between a sample and the one before it of the same GPU and
field; the rules are SQL in sql/health/gpu_events.sql. The store's append calls `note` in its
transaction once a batch is whole (`warehouse.tsdb.append.derive`: at once, or for an ingest
after its last chunk), so the events of a batch are stored with it, once: a delivery stored
again adds no samples and so no events. The sample before a
batch comes from wanka.gpu_event_state, which each `note` moves on.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import duckdb

from warehouse.kernel.catalog import sql_dir

#: A non-zero XID gauge holding the same code this long without a sample is a new event.
REPEAT_GAP_S = 3600
#: How far back the sample before a batch is looked for (a GPU silent longer starts afresh).
LOOKBACK_S = 6 * 3600
#: Seconds without a sample that make a GPU silent, where wanka.health_rules has no `silent` row.
SILENT_S = 300
#: The columns of gpu_events each rule file's SELECT gives.
_COLUMNS = "ts, host, gpu, uuid, kind, code, detail, metric, value, batch_id"


@functools.cache
def _template(name: str) -> str:
    return (sql_dir() / "health" / f"{name}.sql").read_text(encoding="utf-8")


def events_sql(batches: str) -> str:
    """The SELECT of the events the batches `batches` (a SQL list of ids) show."""
    return _template("gpu_events").format(
        batches=batches, repeat_gap_s=REPEAT_GAP_S, lookback_s=LOOKBACK_S
    )


def silence_sql(batches: str, silent_s: int) -> str:
    """The SELECT of the 'silent' events the batches `batches` show, for a threshold of
    `silent_s` seconds."""
    return _template("gpu_silence").format(
        batches=batches, silent_s=silent_s, half_s=silent_s // 2, lookback_s=LOOKBACK_S
    )


def silent_after_s(cur: duckdb.DuckDBPyConnection) -> int:
    """Seconds without a sample after which a GPU is silent: the `silent` rule's threshold."""
    row = cur.execute("SELECT threshold FROM wanka.health_rules WHERE rule = 'silent'").fetchone()
    return max(1, int(row[0])) if row and row[0] is not None else SILENT_S


def note(cur: duckdb.DuckDBPyConnection, batch_ids: Sequence[int]) -> int:
    """Store the events of the telemetry batches `batch_ids` and move wanka.gpu_event_state on;
    how many events. The ids are constants in the SQL, so its scans of gpu_samples skip every
    older row group (zone maps)."""
    if not batch_ids:
        return 0
    listed = ", ".join(str(int(b)) for b in sorted(set(batch_ids)))
    written = 0
    for select in (events_sql(listed), silence_sql(listed, silent_after_s(cur))):
        (count,) = cur.execute(
            f"INSERT INTO gpu_events ({_COLUMNS}) SELECT {_COLUMNS} FROM ({select})"
        ).fetchall()[0]
        written += int(count)
    cur.execute(_template("gpu_event_state").format(batches=listed))
    return written
