"""Writing gpu_metrics rows into the series dictionary and the samples, as they come.

`warehouse.tsdb.append` is the one way in; this is its plain path (the deduplicating one is
`warehouse.tsdb.dedupe`). DuckDB cannot write through the `gpu_metrics` view, so:

- `insert` appends gpu_metrics-shaped Arrow rows: the label sets not yet known become series
  (ids in metric, host, gpu, ... order), then every row becomes a sample of its series, in the
  order the rows came (a scrape's samples stay metric by metric, as DuckDB compresses best).
  Which rows share a label set is found in Arrow (`warehouse.tsdb.codes`), so the SQL
  compares each distinct set with the series once, not each row's label text.
- `insert_from` appends the rows of a relation (the DML rewrite's INSERT into gpu_metrics).

Each returns what it wrote (`Written`): the caller, `append`, derives from it once.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.errors import UserError
from warehouse.tsdb import tiers
from warehouse.tsdb.codes import series_codes
from warehouse.tsdb.relations import (
    BATCHES,
    BLOCKS,
    COLUMNS,
    HOT,
    LABEL_COLUMNS,
    REQUIRED,
    SAME_SERIES,
    SAMPLE_COLUMNS,
    SERIES,
    is_view,
)

_CODE = "_wanka_set"  # the label set code of an Arrow row (codes.series_codes)


@dataclass(frozen=True)
class Written:
    """What one write stored: its samples, the batches they went to, and the highest series
    id before it (the series past it are new)."""

    rows: int
    batches: tuple[int, ...]
    known_series: int


NOTHING = Written(0, (), 0)


def clear(cur: duckdb.DuckDBPyConnection, table: str) -> None:
    """Delete every row of `table`; for gpu_metrics its samples and then its series."""
    if is_view(table):
        cur.execute(f"DELETE FROM {HOT}")
        cur.execute(f"DELETE FROM {BLOCKS}")
        cur.execute(f"DELETE FROM {SERIES}")
        cur.execute(f"DELETE FROM {BATCHES}")
        tiers.clear(cur)
    else:
        cur.execute(f'DELETE FROM "{table}"')


def insert(
    cur: duckdb.DuckDBPyConnection,
    data: pa.Table | pa.RecordBatchReader,
    batch_id: int | None = None,
) -> Written:
    """Append gpu_metrics rows (columns matched by name; missing ones are null). Rows without a
    batch_id column go to batch `batch_id`, or to one new batch for all of them."""
    given = "batch_id" in data.schema.names
    if not given and batch_id is None:
        batch_id = next_batch(cur)
    if isinstance(data, pa.RecordBatchReader):  # a stream: one batch id for all of it too
        parts = [insert(cur, pa.Table.from_batches([part]), batch_id) for part in data]
        return _sum(parts)
    unknown = [c for c in data.schema.names if c not in COLUMNS]
    if unknown:
        raise UserError(f"gpu_metrics has no column {unknown[0]!r} (columns: {', '.join(COLUMNS)})")
    if not data.num_rows:
        return NOTHING
    return _insert_coded(
        cur, data, set(data.schema.names), "x.batch_id" if given else str(batch_id)
    )


def _sum(parts: list[Written]) -> Written:
    if not parts:
        return NOTHING
    batches = sorted({b for part in parts for b in part.batches})
    return Written(sum(p.rows for p in parts), tuple(batches), parts[0].known_series)


def _cast(names: set[str], wanted: tuple[str, ...]) -> str:
    """The `wanted` gpu_metrics columns of a relation with columns `names`, cast to their
    types; those it lacks as NULL."""

    def column(name: str) -> str:
        kind = COLUMNS[name]
        return f'CAST("{name}" AS {kind}) AS {name}' if name in names else f"NULL::{kind} AS {name}"

    return ", ".join(column(c) for c in wanted)


def insert_from(cur: duckdb.DuckDBPyConnection, relation: str, names: set[str]) -> Written:
    """Append the rows of `relation` (a table, view or registered Arrow name whose columns
    `names` are gpu_metrics columns)."""
    rows = f"(SELECT {_cast(names, tuple(COLUMNS))} FROM {relation})"
    labels = ", ".join(LABEL_COLUMNS)
    # one statement, one batch (an ingest always gives its own)
    batch = "x.batch_id" if "batch_id" in names else str(next_batch(cur))
    # a label set has one series, except where two transactions added it at once (neither
    # saw the other's): then its samples go to the first, and a fold merges the others
    samples = (
        f"SELECT r.series_id, x.ts, x.value, {batch} FROM {rows} AS x "
        f"JOIN (SELECT min(series_id) AS series_id, {labels} FROM {SERIES} GROUP BY ALL) r "
        f"ON {SAME_SERIES}"
    )
    return _store(cur, f"{rows} AS x", samples, rows, batch)


def _insert_coded(
    cur: duckdb.DuckDBPyConnection, data: pa.Table, names: set[str], batch: str
) -> Written:
    """`insert_from` for Arrow rows, the label sets found in Arrow first (codes.series_codes):
    the SQL matches each distinct set to its series once, and the rows by an integer code.
    `batch`: the rows' own `x.batch_id`, or one batch id for all of them."""
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
        series = f"(SELECT {_CODE}, {_cast(names, LABEL_COLUMNS)} FROM {sets_view})"
        samples = f"(SELECT {_CODE}, {_cast(names, SAMPLE_COLUMNS)} FROM {rows_view})"
        # the first series of each set (see insert_from), grouped after the join: grouping
        # the whole dictionary first cost a pass over every series it holds (18.75M after a
        # month of 10,000 GPUs' jobs), where the join reads each once
        ids = (
            f"SELECT x.{_CODE}, min(r.series_id) AS series_id FROM {series} AS x "
            f"JOIN {SERIES} r ON {SAME_SERIES} GROUP BY x.{_CODE}"
        )
        select = (
            f"SELECT i.series_id, x.ts, x.value, {batch} FROM {samples} AS x "
            f"JOIN ({ids}) i ON i.{_CODE} = x.{_CODE}"
        )
        return _store(cur, f"{series} AS x", select, samples, batch)
    finally:
        for view in (rows_view, sets_view):
            with contextlib.suppress(duckdb.TransactionException):  # aborted: keep the first error
                cur.unregister(view)


def _store(
    cur: duckdb.DuckDBPyConnection, series: str, samples: str, rows: str, batch: str
) -> Written:
    """Add the label sets of `series` as series, the rows `samples` selects as samples, the
    batch of `rows` (with ts, and batch_id where `batch` names it); what was written."""
    try:
        known = add_series(cur, series)
        written = cur.execute(
            f"INSERT INTO {HOT} (series_id, ts, value, batch_id) {samples}"
        ).fetchall()
        logged = cur.execute(
            f"INSERT INTO {BATCHES} SELECT {batch}, count(*), min(ts), max(ts) FROM {rows} AS x "
            f"GROUP BY ALL RETURNING batch_id"
        ).fetchall()
        batches = tuple(sorted(int(b) for (b,) in logged if b is not None))
    except duckdb.ConstraintException as error:
        raise UserError(_null_message(str(error))) from None
    return Written(int(written[0][0]), batches, known)


def add_series(cur: duckdb.DuckDBPyConnection, relation: str) -> int:
    """Add the label sets of `relation` (aliased x, with the LABEL_COLUMNS) not yet in the
    series dictionary, ids in label order; the highest series id before them.

    Ids go by metric first, so a metric's series are a narrow id range. The rows are stored by
    GPU and labels first, the metrics of one label set side by side: DuckDB compresses a string
    column per segment, and there the labels of one GPU repeat once per metric. Measured on a
    day of 10,000 GPUs at 60 s (1.07M series, bench_storage): 13.1 MB of dictionary against
    26.7 MB stored in id order."""
    labels = ", ".join(LABEL_COLUMNS)
    known = int(cur.execute(f"SELECT coalesce(max(series_id), 0) FROM {SERIES}").fetchall()[0][0])
    new = f"_wanka_new_series_{threading.get_ident()}"
    cur.execute(
        f"CREATE OR REPLACE TEMP TABLE {new} AS "
        f"SELECT nextval('wanka.series_seq') AS series_id, {labels} FROM ("
        f"SELECT DISTINCT {labels} FROM {relation} "
        f"WHERE NOT EXISTS (SELECT 1 FROM {SERIES} r WHERE {SAME_SERIES}) "
        f"ORDER BY {labels})"
    )
    try:
        by_gpu = ", ".join([*LABEL_COLUMNS[1:], LABEL_COLUMNS[0]])
        cur.execute(
            f"INSERT INTO {SERIES} (series_id, {labels}) "
            f"SELECT series_id, {labels} FROM {new} ORDER BY {by_gpu}"
        )
    finally:  # after an error the transaction is aborted, and its rollback drops the table
        with contextlib.suppress(duckdb.Error):
            cur.execute(f"DROP TABLE IF EXISTS {new}")
    return known


def next_batch(cur: duckdb.DuckDBPyConnection) -> int:
    """A new batch id."""
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
