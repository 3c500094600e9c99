"""Store decoded remote_write rows once: a sample already stored is not stored again.

Prometheus retries a request on 5xx and on timeouts, so the same samples arrive again, maybe in
another grouping; a sample is the same when its series (every label) and timestamp are. One
call is one transaction over the rows of every request in it:

1. DCGM series: label sets not yet known join the series dictionary (`telemetry.add_series`);
   each request-local series id maps to its stored one, so samples are matched by integers;
2. samples: duplicates within the requests dropped (the first value kept), then those whose
   (series, ts) is stored already, read over the requests' time range only (zone maps keep
   that to the newest row groups); the rest appended under one batch id, with the batch's row
   in wanka.sample_batches and the job labels noted (`warehouse.attribution`), as every
   telemetry write does;
3. other series into prom_samples and staleness markers into wanka.stale_markers, the same way
   keyed by (metric, labels, ts);
4. one row in wanka.remote_write_batches says what the transaction did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from warehouse import attribution, telemetry
from warehouse.engine import transaction
from warehouse.remote_write.decode import Decoded


@dataclass(frozen=True)
class Stored:
    batch_id: int
    gpu: int  # new gpu_metrics samples
    other: int  # new prom_samples rows
    stale: int  # new staleness markers
    duplicates: int  # samples already stored (or twice in the requests)


def store(
    cur: duckdb.DuckDBPyConnection,
    rows: Decoded,
    then: Callable[[duckdb.DuckDBPyConnection, int], None] | None = None,
) -> Stored:
    """Store `rows` in one transaction; what was new. `then(cur, batch_id)` runs in the same
    transaction before it commits (a scrape round records its targets' health)."""
    tag = threading.get_ident()
    names = {kind: f"_wanka_rw_{kind}_{tag}" for kind in ("series", "samples", "stale")}
    with transaction(cur):
        batch_id = int(cur.execute("SELECT nextval('wanka.batch_seq')").fetchall()[0][0])
        cur.register(names["series"], rows.series)
        cur.register(names["samples"], _numbered(rows.samples))
        cur.register(names["stale"], _numbered(rows.stale))
        try:
            gpu = _store_gpu(cur, names, batch_id) if rows.samples.num_rows else 0
            other = _store_other(cur, names, batch_id) if rows.samples.num_rows else 0
            stale = _store_stale(cur, names, batch_id) if rows.stale.num_rows else 0
        finally:
            for name in names.values():
                cur.unregister(name)
        duplicates = rows.received - gpu - other - stale
        cur.execute(
            "INSERT INTO wanka.remote_write_batches VALUES (?, now(), ?, ?, ?, ?, ?, ?)",
            [batch_id, rows.requests, rows.received, gpu, other, duplicates, stale],
        )
        if then is not None:
            then(cur, batch_id)
    return Stored(batch_id, gpu, other, stale, duplicates)


def _numbered(table: pa.Table) -> pa.Table:
    """`table` with its arrival order as column `n`: of a sample sent twice, the first wins."""
    return table.append_column("n", pa.array(range(table.num_rows), pa.int64()))


def _store_gpu(cur: duckdb.DuckDBPyConnection, names: dict[str, str], batch_id: int) -> int:
    series, samples = names["series"], names["samples"]
    dcgm = f"(SELECT * FROM {series} WHERE dcgm) AS x"
    if not cur.execute(f"SELECT count(*) FROM {dcgm}").fetchall()[0][0]:
        return 0
    known = telemetry.add_series(cur, dcgm)
    fresh = f"_wanka_rw_fresh_{threading.get_ident()}"
    cur.execute(
        f"CREATE OR REPLACE TEMP TABLE {fresh} AS "
        f"WITH ids AS (SELECT x.sid, min(r.series_id) AS series_id FROM {dcgm} "
        f"  JOIN {telemetry.SERIES} r ON {telemetry.SAME_SERIES} GROUP BY x.sid), "
        f"given AS (SELECT DISTINCT ON (ids.series_id, s.ts) ids.series_id, s.ts, s.value "
        f"  FROM {samples} s JOIN ids USING (sid) ORDER BY ids.series_id, s.ts, s.n) "
        f"SELECT * FROM given g WHERE NOT EXISTS (SELECT 1 FROM {telemetry.SAMPLES} t "
        f"  WHERE t.series_id = g.series_id AND t.ts = g.ts "
        f"  AND t.ts BETWEEN (SELECT min(ts) FROM given) AND (SELECT max(ts) FROM given))"
    )
    try:
        written = cur.execute(
            f"INSERT INTO {telemetry.SAMPLES} (series_id, ts, value, batch_id) "
            f"SELECT series_id, ts, value, {batch_id} FROM {fresh} ORDER BY series_id, ts"
        ).fetchall()[0][0]
        if written:
            cur.execute(
                f"INSERT INTO {telemetry.BATCHES} SELECT {batch_id}, count(*), min(ts), max(ts) "
                f"FROM {fresh}"
            )
            attribution.note_gpus(cur, known)
            attribution.note_labels(cur, str(batch_id))
    finally:
        cur.execute(f"DROP TABLE IF EXISTS {fresh}")
    return int(written)


def _store_other(cur: duckdb.DuckDBPyConnection, names: dict[str, str], batch_id: int) -> int:
    rows = (
        f"SELECT s.ts, x.metric, x.all_labels AS labels, s.value, s.n AS n "
        f"FROM {names['samples']} s JOIN {names['series']} x USING (sid) WHERE NOT x.dcgm"
    )
    return _insert_new(cur, rows, "prom_samples", "ts, metric, labels, value", batch_id)


def _store_stale(cur: duckdb.DuckDBPyConnection, names: dict[str, str], batch_id: int) -> int:
    rows = (
        f"SELECT s.ts, x.metric, x.all_labels AS labels, s.n AS n "
        f"FROM {names['stale']} s JOIN {names['series']} x USING (sid)"
    )
    return _insert_new(cur, rows, "wanka.stale_markers", "ts, metric, labels", batch_id)


def _insert_new(
    cur: duckdb.DuckDBPyConnection, rows: str, table: str, columns: str, batch_id: int
) -> int:
    """Insert the rows of `rows` whose (metric, labels, ts) `table` does not hold yet."""
    written = cur.execute(
        f"WITH given AS (SELECT DISTINCT ON (metric, labels, ts) * FROM ({rows}) "
        f"  ORDER BY metric, labels, ts, n) "
        f"INSERT INTO {table} ({columns}, batch_id) SELECT {columns}, {batch_id} FROM given g "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table} r WHERE r.ts = g.ts AND r.metric = g.metric "
        f"  AND r.labels IS NOT DISTINCT FROM g.labels "
        f"  AND r.ts BETWEEN (SELECT min(ts) FROM given) AND (SELECT max(ts) FROM given)) "
        f"ORDER BY n"
    ).fetchall()
    return int(written[0][0])
