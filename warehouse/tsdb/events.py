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
import threading
from collections.abc import Sequence

import duckdb

from warehouse.kernel.catalog import sql_dir
from warehouse.tsdb.relations import SERIES

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


def events_sql(batches: str, fresh: str, scan: bool = True) -> str:
    """The SELECT of the events the batches `batches` (a SQL list of ids) show, from their
    samples of event fields in table `fresh` (`samples_sql`); `scan`: whether some GPU and
    field needs the stored samples for the sample before (sql/health/gpu_event_unknown.sql)."""
    return _template("gpu_events").format(
        batches=batches,
        fresh=fresh,
        scan=str(scan).lower(),
        repeat_gap_s=REPEAT_GAP_S,
        lookback_s=LOOKBACK_S,
    )


def silence_sql(batches: str, fresh: str, silent_s: int) -> str:
    """The SELECT of the 'silent' events the batches `batches` show (their samples of event
    fields in table `fresh`), for a threshold of `silent_s` seconds."""
    return _template("gpu_silence").format(
        batches=batches, fresh=fresh, silent_s=silent_s, half_s=silent_s // 2, lookback_s=LOOKBACK_S
    )


def samples_sql(batches: str, series: str = SERIES) -> str:
    """The SELECT of the batches' samples of event fields with their GPU, their series found in
    `series` (a relation of series_id, host, gpu, uuid, metric: the dictionary by default)."""
    return _template("gpu_event_samples").format(batches=batches, series=series)


def silent_after_s(cur: duckdb.DuckDBPyConnection) -> int:
    """Seconds without a sample after which a GPU is silent: the `silent` rule's threshold."""
    row = cur.execute("SELECT threshold FROM wanka.health_rules WHERE rule = 'silent'").fetchone()
    return max(1, int(row[0])) if row and row[0] is not None else SILENT_S


def note(cur: duckdb.DuckDBPyConnection, batch_ids: Sequence[int], series: str = SERIES) -> int:
    """Store the events of the telemetry batches `batch_ids` and move wanka.gpu_event_state on;
    how many events. The ids are constants in the SQL, so its scans of gpu_samples skip every
    older row group (zone maps). `series` holds the batches' series (the dictionary by
    default; the deduplicating append hands in the batch's own).

    The batches' samples of event fields are read once, into a temporary table that the three
    statements share: each read the series dictionary before, ~35 ms at 10,000 GPUs, which
    was most of a remote_write transaction's cost."""
    if not batch_ids:
        return 0
    listed = ", ".join(str(int(b)) for b in sorted(set(batch_ids)))
    fresh = f"_wanka_event_samples_{threading.get_ident()}"
    cur.execute(f"CREATE OR REPLACE TEMP TABLE {fresh} AS {samples_sql(listed, series)}")
    try:
        [(scan,)] = cur.execute(_template("gpu_event_unknown").format(fresh=fresh)).fetchall()
        written = 0
        for select in (
            events_sql(listed, fresh, bool(scan)),
            silence_sql(listed, fresh, silent_after_s(cur)),
        ):
            (count,) = cur.execute(
                f"INSERT INTO gpu_events ({_COLUMNS}) SELECT {_COLUMNS} FROM ({select})"
            ).fetchall()[0]
            written += int(count)
        cur.execute(_template("gpu_event_state").format(batches=listed, fresh=fresh))
    finally:
        cur.execute(f"DROP TABLE IF EXISTS {fresh}")
    return written
