"""Appending labelled samples once: a sample already stored is not stored again.

The deduplicating path of `warehouse.tsdb.append` (remote_write, scrape rounds, and Arrow rows
appended with `exactly_once`). Prometheus retries a request on 5xx and on timeouts, so the
same samples arrive again, maybe in another grouping; a sample is the same when its series
(every label) and timestamp are. One call is one transaction over all the rows given:

1. DCGM series: label sets not yet known join the series dictionary (`write.add_series`);
   each request-local series id maps to its stored one, so samples are matched by integers;
2. samples: duplicates within the rows dropped (the first value kept), then those whose
   (series, ts) is stored already, read over the rows' time range only (zone maps keep that
   to the newest row groups); the rest appended under one batch id, with the batch's row in
   the batch log;
3. other series into prom_samples and staleness markers into wanka.stale_markers, the same way
   keyed by (metric, labels, ts);
4. one row in wanka.remote_write_batches says what the transaction did.

The derivations follow in `append`, in the same transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import duckdb
import pyarrow as pa

from warehouse.tsdb import relations, write
from warehouse.tsdb.relations import BATCHES, HOT, SAME_SERIES, SERIES


class Labelled(Protocol):
    """Samples with their series, as remote_write decodes them (`remote_write.rows.Decoded`)."""

    #: sid, metric, host, gpu, uuid, model, labels, dcgm, all_labels, series_id
    series: pa.Table
    samples: pa.Table  # sid, ts, value
    stale: pa.Table  # sid, ts
    received: int  # float samples received, staleness markers included
    requests: int
    keys: Sequence[Any] | None  # what each sid is, for the cache (None: no cache)


class IdCache(Protocol):
    """Remembers the series ids of label sets resolved before (`remote_write.rows.SeriesCache`)."""

    def remember(self, stored: list[tuple[Any, int]]) -> None: ...

    def forget_ids(self) -> None: ...


@dataclass(frozen=True)
class Stored:
    """What one deduplicating append stored."""

    gpu: int  # new gpu_metrics samples
    other: int  # new prom_samples rows
    stale: int  # new staleness markers
    duplicates: int  # samples already stored (or twice in the rows)
    known_series: int  # the highest series id before it
    resolved: list[tuple[int, int]]  # (sid, series_id) of label sets matched by their labels
    #: A temporary table of the DCGM series of the rows (series_id, host, gpu, uuid, metric),
    #: for the derivations; the caller drops it (None: no DCGM samples).
    series: str | None = None


def store(
    cur: duckdb.DuckDBPyConnection, rows: Labelled, batch_id: int, cache: IdCache | None
) -> Stored:
    """Store what of `rows` is new under `batch_id`, in the caller's transaction."""
    tag = threading.get_ident()
    names = {kind: f"_wanka_rw_{kind}_{tag}" for kind in ("series", "samples", "stale")}
    resolved: list[tuple[int, int]] = []
    known = 0
    cur.register(names["series"], rows.series)
    cur.register(names["samples"], _numbered(rows.samples))
    cur.register(names["stale"], _numbered(rows.stale))
    try:
        if rows.samples.num_rows:
            gpu, known, resolved, batch_series = _store_gpu(cur, names, batch_id, cache)
        else:
            gpu, batch_series = 0, None
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
    return Stored(gpu, other, stale, duplicates, known, resolved, batch_series)


def _numbered(table: pa.Table) -> pa.Table:
    """`table` with its arrival order as column `n`: of a sample sent twice, the first wins."""
    return table.append_column("n", pa.array(range(table.num_rows), pa.int64()))


def _store_gpu(
    cur: duckdb.DuckDBPyConnection,
    names: dict[str, str],
    batch_id: int,
    cache: IdCache | None,
) -> tuple[int, int, list[tuple[int, int]], str | None]:
    """Append the new DCGM samples; how many, the highest series id before them, the
    (sid, series_id) pairs it resolved by label set (those the cache did not know), and the
    temporary table of the rows' DCGM series (`Stored.series`)."""
    series, samples = names["series"], names["samples"]
    [(dcgm_count, cached)] = cur.execute(
        f"SELECT count(*), count(series_id) FROM {series} WHERE dcgm"
    ).fetchall()
    if not dcgm_count:
        return 0, 0, [], None
    if cached and not _cached_ids_hold(cur, series):
        if cache is not None:
            cache.forget_ids()  # a series was merged away (telemetry_tiers): match them all
        cached = 0
    unknown = (
        f"(SELECT * FROM {series} WHERE dcgm{' AND series_id IS NULL' if cached else ''}) AS x"
    )
    known = (
        write.add_series(cur, unknown)
        if dcgm_count > cached
        else int(cur.execute(f"SELECT max(series_id) FROM {SERIES}").fetchall()[0][0])
    )
    fresh = f"_wanka_rw_fresh_{threading.get_ident()}"
    ids = f"_wanka_rw_ids_{threading.get_ident()}"
    matched = (
        f"SELECT x.sid, min(r.series_id) AS series_id, true AS resolved FROM {unknown} "
        f"JOIN {SERIES} r ON {SAME_SERIES} GROUP BY x.sid"
    )
    if cached:
        matched += (
            f" UNION ALL SELECT sid, series_id, false FROM {series} "
            "WHERE dcgm AND series_id IS NOT NULL"
        )
    cur.execute(f"CREATE OR REPLACE TEMP TABLE {ids} AS {matched}")
    batch_series = f"_wanka_rw_batch_series_{threading.get_ident()}"
    cur.execute(
        f"CREATE OR REPLACE TEMP TABLE {batch_series} AS SELECT ids.series_id, x.host, x.gpu, "
        f"x.uuid, x.metric FROM {ids} ids JOIN {series} x USING (sid)"
    )
    # what is stored already, hot or cold, in the given samples' time range and series
    _held = relations.samples(
        ts=("(SELECT min(ts) FROM given)", "(SELECT max(ts) FROM given)"),
        series="SELECT series_id FROM given",
    )
    cur.execute(
        f"CREATE OR REPLACE TEMP TABLE {fresh} AS "
        f"WITH given AS (SELECT DISTINCT ON (ids.series_id, s.ts) ids.series_id, s.ts, s.value "
        f"  FROM {samples} s JOIN {ids} ids USING (sid) ORDER BY ids.series_id, s.ts, s.n) "
        f"SELECT * FROM given g WHERE NOT EXISTS (SELECT 1 FROM {_held} t "
        f"  WHERE t.series_id = g.series_id AND t.ts = g.ts "
        f"  AND t.ts BETWEEN (SELECT min(ts) FROM given) AND (SELECT max(ts) FROM given))"
    )
    try:
        written = cur.execute(
            f"INSERT INTO {HOT} (series_id, ts, value, batch_id) "
            f"SELECT series_id, ts, value, {batch_id} FROM {fresh} ORDER BY series_id, ts"
        ).fetchall()[0][0]
        if written:
            cur.execute(
                f"INSERT INTO {BATCHES} SELECT {batch_id}, count(*), min(ts), max(ts) FROM {fresh}"
            )
        resolved = cur.execute(f"SELECT sid, series_id FROM {ids} WHERE resolved").fetchall()
    finally:
        cur.execute(f"DROP TABLE IF EXISTS {fresh}")
        cur.execute(f"DROP TABLE IF EXISTS {ids}")
    return int(written), known, [(int(a), int(b)) for a, b in resolved], batch_series


def _cached_ids_hold(cur: duckdb.DuckDBPyConnection, series: str) -> bool:
    """Whether every series id the cache gave is still in the series dictionary."""
    [(given, found)] = cur.execute(
        f"SELECT (SELECT count(DISTINCT series_id) FROM {series}), "
        f"(SELECT count(*) FROM {SERIES} WHERE series_id IN "
        f"(SELECT series_id FROM {series} WHERE series_id IS NOT NULL))"
    ).fetchall()
    return bool(given == found)


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
