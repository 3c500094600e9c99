"""The downsampling tiers' rows of closed windows, in compressed blocks.

A tier row (series, bucket, samples, value sum, min, max, last, last time) is exact partial
state, so a closed window's rows change only when a fold must change one of its buckets: late
samples, an UPDATE or DELETE of hot samples, twin series merged. `freeze` moves one window's
rows of one metric of a tier into `wanka.tier_blocks` (sql/schema/0021_telemetry_blocks.sql),
cut into blocks of whole series runs; `thaw` puts the rows of the blocks a fold is about to
change back into the tier table first, so a bucket is always one row, in the table or in a block.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.kernel import blocks

TABLE = "wanka.tier_blocks"
#: A tier row's columns after its series id, as a block holds them (times as µs).
_COLUMNS = ("bucket", "samples", "value_sum", "value_min", "value_max", "value_last", "last_ts")
_TIMES = ("bucket", "last_ts")


def cuts(ids: np.ndarray, size: int) -> list[int]:
    """Where to cut rows ordered by series into blocks of whole series runs of about `size`
    rows: the first row of each block, then the row count.

    >>> cuts(np.array([1, 1, 2, 2, 3]), 2)
    [0, 2, 4, 5]
    """
    starts = np.flatnonzero(np.diff(ids, prepend=ids[0] - 1)) if len(ids) else ids
    found = [0]
    for start in starts[1:]:
        if start - found[-1] >= size:
            found.append(int(start))
    found.append(len(ids))
    return found


def freeze(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    start: datetime,
    metric: str,
    window: timedelta,
    size: int,
    ids: pa.Table,
    window_start: datetime | None = None,
) -> tuple[int, int]:
    """Move `table`'s rows of one metric with buckets in [start, start + window) into blocks
    of the window starting at `window_start` (`start`), in the caller's transaction; the rows
    moved and their bytes. `ids`: the metric's series in `table` (read once a pass,
    warehouse.tsdb.compact.series_by_metric: not a scan of the series dictionary here)."""
    where = (
        f"FROM {table} t WHERE t.series_id IN (SELECT series_id FROM {_IDS}) "
        "AND t.bucket >= $start AND t.bucket < $start + $window::INTERVAL"
    )
    given = {"start": start, "window": window}
    with registered(cur, _IDS, ids):
        return _freeze(cur, table, window_start or start, metric, size, where, given)


_IDS = "_wanka_tier_ids"


@contextlib.contextmanager
def registered(cur: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> Iterator[None]:
    """`table` as the relation `name` on `cur` while the block runs."""
    cur.register(name, table)
    try:
        yield
    finally:
        cur.unregister(name)


def _freeze(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    window_start: datetime,
    metric: str,
    size: int,
    where: str,
    given: dict[str, object],
) -> tuple[int, int]:
    picked = ", ".join(f"epoch_us(t.{c}) AS {c}" if c in _TIMES else f"t.{c}" for c in _COLUMNS)
    rows = cur.sql(
        f"SELECT t.series_id, {picked} {where} ORDER BY t.series_id, t.bucket", params=given
    ).to_arrow_table()
    if not rows.num_rows:
        return 0, 0
    columns = [
        (
            np.asarray(
                rows[c].fill_null(0).to_numpy(),
                dtype=np.float64 if c.startswith("value") else np.int64,
            ),
            rows[c].is_null().to_numpy(zero_copy_only=False) if rows[c].null_count else None,
        )
        for c in _COLUMNS
    ]
    size_of = store(cur, table, window_start, metric, rows["series_id"].to_numpy(), columns, size)
    [(moved,)] = cur.execute(f"DELETE {where}", given).fetchall()
    if moved != rows.num_rows:  # one snapshot: cannot happen; never lose a row
        raise RuntimeError(
            f"compaction of {table} {metric} at {window_start}: {moved} != {rows.num_rows}"
        )
    return rows.num_rows, size_of


def store(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    window_start: datetime,
    metric: str,
    ids: np.ndarray,
    columns: list[blocks.Column],
    size: int,
) -> int:
    """Write tier rows ordered by series then bucket (their series ids and `_COLUMNS`, times
    as µs) as blocks of whole series runs of about `size` rows, each with its series and
    bucket range; their bytes."""
    made = []
    bucket = columns[0][0]
    for lo, hi in itertools.pairwise(cuts(ids, size)):
        part = [(v[lo:hi], None if m is None else m[lo:hi]) for v, m in columns]
        span = bucket[lo:hi]
        made.append(
            (int(ids[lo]), int(ids[hi - 1]), int(span.min()), int(span.max()), hi - lo,
             blocks.encode_rows(ids[lo:hi], part))
        )  # fmt: skip
    bounds = pa.table(
        {
            "series_lo": pa.array([m[0] for m in made], pa.int32()),
            "series_hi": pa.array([m[1] for m in made], pa.int32()),
            "bucket_min": pa.array([m[2] for m in made], pa.timestamp("us", tz="UTC")),
            "bucket_max": pa.array([m[3] for m in made], pa.timestamp("us", tz="UTC")),
            "rows": pa.array([m[4] for m in made], pa.int64()),
            "data": pa.array([m[5] for m in made], type=pa.binary()),
        }
    )
    with registered(cur, "_wanka_tier_blocks", bounds):
        cur.execute(
            f"INSERT INTO {TABLE} SELECT $tier, $metric, $start, b.series_lo, b.series_hi, "
            "b.bucket_min, b.bucket_max, b.rows, b.data FROM _wanka_tier_blocks b",
            {"tier": table, "metric": metric, "start": window_start},
        )
    return sum(len(m[5]) for m in made)


def thaw(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    lo: str,
    hi: str,
    series: str | None = None,
    params: dict[str, object] | None = None,
) -> int:
    """Put back into `table` the rows of its blocks whose buckets may fall in [lo, hi] (SQL
    expressions) and, if given, hold a series of `series` (a query of series ids); the blocks
    go. In the caller's transaction; the rows put back."""
    which = f"tier = '{table}' AND bucket_max >= {lo} AND bucket_min <= {hi}"
    if series is not None:
        which += (
            f" AND EXISTS (SELECT 1 FROM ({series}) AS w(id) "
            "WHERE w.id BETWEEN series_lo AND series_hi)"
        )
    [(found,)] = cur.execute(
        f"SELECT count(*) FROM {TABLE} WHERE {which}", params or None
    ).fetchall()
    if not found:
        return 0
    rows = cur.execute(
        f"INSERT INTO {table} SELECT unnest(wanka_tier_block(data, NULL, NULL, NULL), "
        f"recursive := true) FROM {TABLE} WHERE {which}",
        params or None,
    ).fetchall()[0][0]
    cur.execute(f"DELETE FROM {TABLE} WHERE {which}", params or None)
    return int(rows)


def rows(table: str, lo: str | None, hi: str | None, metrics: str | None = None) -> str:
    """A relation of tier `table`'s rows, in the table and in its blocks, as SQL in
    parentheses: only the blocks whose buckets may fall in [lo, hi] (SQL expressions; None:
    open) and, if given, whose metric is in `metrics` (a SQL list) are decoded."""
    hot, cold = [], [f"tier = '{table}'"]
    if lo is not None:
        hot.append(f"bucket >= {lo}")
        cold.append(f"bucket_max >= {lo}")
    if hi is not None:
        hot.append(f"bucket <= {hi}")
        cold.append(f"bucket_min <= {hi}")
    if metrics is not None:
        cold.append(f"metric IN ({metrics})")
    bounds = ", ".join(f"CAST({b} AS TIMESTAMPTZ)" if b is not None else "NULL" for b in (lo, hi))
    return (
        f"(SELECT * FROM {table}{' WHERE ' + ' AND '.join(hot) if hot else ''}\n UNION ALL\n "
        f"SELECT unnest(wanka_tier_block(data, {bounds}, NULL), recursive := true) "
        f"FROM {TABLE} WHERE {' AND '.join(cold)})"
    )
