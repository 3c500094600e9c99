"""Writing telemetry: gpu_metrics rows into the series dictionary and the samples.

`gpu_metrics` is a view over `wanka.gpu_series` (one row per distinct label set) and
`wanka.gpu_samples` (series id, ts, value, batch id); sql/schema/0012_compact_telemetry.sql says
why. Reads need nothing from here. Writes do, as DuckDB cannot write through a view:

- `insert` appends gpu_metrics-shaped Arrow rows: the label sets not yet known become series
  (ids in metric, host, gpu, ... order), then every row becomes a sample of its series, in the
  order the rows came (a scrape's samples stay metric by metric, as DuckDB compresses best).
  Which rows share a label set is found in Arrow (`warehouse.tsdb.codes`), so the SQL
  compares each distinct set with the series once, not each row's label text.
- the downsampling tiers follow on the scheduler (`warehouse.tsdb.tiers`); the job labels
  of the new samples are noted at once (`warehouse.jobs.attribution`).
- `rewrite` turns an INSERT, UPDATE or DELETE whose target is gpu_metrics into statements on the
  two tables; `warehouse.query.executor` runs them in place of the user's.
"""

from __future__ import annotations

import contextlib
import threading

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.errors import UserError
from warehouse.jobs import attribution
from warehouse.tsdb import events as gpu_events
from warehouse.tsdb import tiers
from warehouse.tsdb.codes import series_codes

VIEW = "gpu_metrics"
SERIES = "wanka.gpu_series"
SAMPLES = "wanka.gpu_samples"
#: One row per insert of samples (batch id, rows, time range): where a refresh finds new batches.
BATCHES = "wanka.sample_batches"
#: The view's columns, in its order, with their types.
COLUMNS = {
    "ts": "TIMESTAMPTZ",
    "host": "VARCHAR",
    "gpu": "INTEGER",
    "uuid": "VARCHAR",
    "model": "VARCHAR",
    "metric": "VARCHAR",
    "value": "DOUBLE",
    "labels": "JSON",
    "batch_id": "BIGINT",
}
#: The columns that name a series (they live in wanka.gpu_series), in id order.
LABEL_COLUMNS = ("metric", "host", "gpu", "uuid", "model", "labels")
#: The columns of a sample (wanka.gpu_samples, beside series_id).
SAMPLE_COLUMNS = ("ts", "value", "batch_id")
_CODE = "_wanka_set"  # the label set code of an Arrow row (telemetry_codes)
REQUIRED = ("ts", "host", "metric")

#: Series r and rows x carry the same label set (NULL-safe): how rows find their series.
SAME_SERIES = " AND ".join(f"r.{c} IS NOT DISTINCT FROM x.{c}" for c in LABEL_COLUMNS)


def is_view(table: str) -> bool:
    """Whether a table name given to an insert means gpu_metrics.

    >>> is_view("gpu_metrics"), is_view('main."gpu_metrics"'), is_view("nodes")
    (True, True, False)
    """
    return table.replace('"', "").lower() in (VIEW, f"main.{VIEW}")


def clear(cur: duckdb.DuckDBPyConnection, table: str) -> None:
    """Delete every row of `table`; for gpu_metrics its samples and then its series."""
    if is_view(table):
        cur.execute(f"DELETE FROM {SAMPLES}")
        cur.execute(f"DELETE FROM {SERIES}")
        cur.execute(f"DELETE FROM {BATCHES}")
        tiers.clear(cur)
    else:
        cur.execute(f'DELETE FROM "{table}"')


def insert(
    cur: duckdb.DuckDBPyConnection, data: pa.Table | pa.RecordBatchReader, *, events: bool = True
) -> int:
    """Append gpu_metrics rows (columns matched by name; missing ones are null, a missing
    batch_id one new batch id for all); returns the rows written."""
    if isinstance(data, pa.RecordBatchReader):  # a stream: one batch id for all of it too
        batch_id = None if "batch_id" in data.schema.names else _next_batch(cur)
        written = 0
        for part in data:
            rows = pa.Table.from_batches([part])
            if batch_id is not None:
                rows = rows.append_column("batch_id", pa.array([batch_id] * rows.num_rows))
            written += insert(cur, rows)
        return written
    unknown = [c for c in data.schema.names if c not in COLUMNS]
    if unknown:
        raise UserError(f"gpu_metrics has no column {unknown[0]!r} (columns: {', '.join(COLUMNS)})")
    if not data.num_rows:
        return 0
    return _insert_coded(cur, data, set(data.schema.names), events)


def _cast(names: set[str], wanted: tuple[str, ...]) -> str:
    """The `wanted` gpu_metrics columns of a relation with columns `names`, cast to their
    types; those it lacks as NULL."""

    def column(name: str) -> str:
        kind = COLUMNS[name]
        return f'CAST("{name}" AS {kind}) AS {name}' if name in names else f"NULL::{kind} AS {name}"

    return ", ".join(column(c) for c in wanted)


def insert_from(cur: duckdb.DuckDBPyConnection, relation: str, names: set[str]) -> int:
    """Append the rows of `relation` (a table, view or registered Arrow name whose columns
    `names` are gpu_metrics columns)."""
    rows = f"(SELECT {_cast(names, tuple(COLUMNS))} FROM {relation})"
    labels = ", ".join(LABEL_COLUMNS)
    # one statement, one batch (an ingest always gives its own)
    batch = "x.batch_id" if "batch_id" in names else str(_next_batch(cur))
    # a label set has one series, except where two transactions added it at once (neither
    # saw the other's): then its samples go to the first, and a fold merges the others
    samples = (
        f"SELECT r.series_id, x.ts, x.value, {batch} FROM {rows} AS x "
        f"JOIN (SELECT min(series_id) AS series_id, {labels} FROM {SERIES} GROUP BY ALL) r "
        f"ON {SAME_SERIES}"
    )
    return _store(cur, f"{rows} AS x", samples, rows, batch)


def _insert_coded(
    cur: duckdb.DuckDBPyConnection, data: pa.Table, names: set[str], events: bool
) -> int:
    """`insert_from` for Arrow rows, the label sets found in Arrow first (telemetry_codes): the
    SQL matches each distinct set to its series once, and the rows by an integer code."""
    present = [c for c in LABEL_COLUMNS if c in names]
    codes, first = series_codes(data, present)
    sets = pa.table({_CODE: np.arange(len(first))})
    for name in present:
        sets = sets.append_column(name, data[name].take(first))
    rows = data.drop_columns(present).append_column(_CODE, pa.array(codes))
    ident = threading.get_ident()
    sets_view, rows_view = f"_wanka_series_{ident}", f"_wanka_telemetry_{ident}"
    cur.register(sets_view, sets)
    cur.register(rows_view, rows)
    try:
        labels = ", ".join(LABEL_COLUMNS)
        series = f"(SELECT {_CODE}, {_cast(names, LABEL_COLUMNS)} FROM {sets_view})"
        samples = f"(SELECT {_CODE}, {_cast(names, SAMPLE_COLUMNS)} FROM {rows_view})"
        batch = "x.batch_id" if "batch_id" in names else str(_next_batch(cur))
        ids = (
            f"SELECT x.{_CODE}, r.series_id FROM {series} AS x "
            f"JOIN (SELECT min(series_id) AS series_id, {labels} FROM {SERIES} GROUP BY ALL) r "
            f"ON {SAME_SERIES}"
        )
        select = (
            f"SELECT i.series_id, x.ts, x.value, {batch} FROM {samples} AS x "
            f"JOIN ({ids}) i ON i.{_CODE} = x.{_CODE}"
        )
        return _store(cur, f"{series} AS x", select, samples, batch, events)
    finally:
        for view in (rows_view, sets_view):
            with contextlib.suppress(duckdb.TransactionException):  # aborted: keep the first error
                cur.unregister(view)


def _store(
    cur: duckdb.DuckDBPyConnection,
    series: str,
    samples: str,
    rows: str,
    batch: str,
    events: bool = True,
) -> int:
    """Add the label sets of `series` as series, the rows `samples` selects as samples, the
    batch of `rows` (with ts, and batch_id where `batch` names it); the rows written."""
    try:
        known = add_series(cur, series)
        written = cur.execute(
            f"INSERT INTO {SAMPLES} (series_id, ts, value, batch_id) {samples}"
        ).fetchall()
        cur.execute(
            f"INSERT INTO {BATCHES} SELECT {batch}, count(*), min(ts), max(ts) FROM {rows} AS x "
            f"GROUP BY ALL"
        )
        attribution.note_gpus(cur, known)
        batches = f"SELECT DISTINCT x.batch_id FROM {rows} AS x" if batch == "x.batch_id" else batch
        attribution.note_labels(cur, batches)
        if events:  # else the caller notes them once its batch is whole (an ingest's chunks)
            ids = cur.execute(batches).fetchall() if batch == "x.batch_id" else [(int(batch),)]
            gpu_events.note(cur, [int(i) for (i,) in ids])
    except duckdb.ConstraintException as error:
        raise UserError(_null_message(str(error))) from None
    return int(written[0][0])


def add_series(cur: duckdb.DuckDBPyConnection, relation: str) -> int:
    """Add the label sets of `relation` (aliased x, with the LABEL_COLUMNS) not yet in the
    series dictionary, ids in label order; the highest series id before them."""
    labels = ", ".join(LABEL_COLUMNS)
    known = int(cur.execute(f"SELECT coalesce(max(series_id), 0) FROM {SERIES}").fetchall()[0][0])
    cur.execute(
        f"INSERT INTO {SERIES} (series_id, {labels}) "
        f"SELECT nextval('wanka.series_seq'), {labels} FROM ("
        f"SELECT DISTINCT {labels} FROM {relation} "
        f"WHERE NOT EXISTS (SELECT 1 FROM {SERIES} r WHERE {SAME_SERIES}) "
        f"ORDER BY {labels})"
    )
    return known


def _next_batch(cur: duckdb.DuckDBPyConnection) -> int:
    return int(cur.execute("SELECT nextval('wanka.batch_seq')").fetchall()[0][0])


def _null_message(error: str) -> str:
    """DuckDB's NOT NULL failure on a storage table, said of the gpu_metrics column.

    >>> _null_message("Constraint Error: NOT NULL constraint failed: gpu_series.host")
    'gpu_metrics.host cannot be null (NOT NULL constraint failed)'
    """
    for name in REQUIRED:
        if error.endswith((f"gpu_series.{name}", f"gpu_samples.{name}")):
            return f"gpu_metrics.{name} cannot be null (NOT NULL constraint failed)"
    return error
