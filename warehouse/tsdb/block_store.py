"""Blocks of samples into wanka.gpu_blocks, with the statistics beside each: what compaction
(`compact`) and the cutting again of a closed window's blocks (`merge`) both write."""

from __future__ import annotations

import itertools
from datetime import datetime

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.kernel import blocks
from warehouse.tsdb import tier_blocks
from warehouse.tsdb.relations import BLOCKS

BLOCK_SAMPLES = 1 << 20


def store(
    cur: duckdb.DuckDBPyConnection,
    rows: pa.Table,
    metric: str,
    window_start: datetime,
    block_samples: int = BLOCK_SAMPLES,
) -> pa.Table:
    """Insert `rows` (series_id, ts in µs, value, batch_id; ordered by series, time, batch) as
    blocks of `metric` and the window at `window_start`, with their statistics; the blocks
    made (block, data)."""
    made, block_of = cut(rows, block_samples)
    insert(cur, rows, made, block_of, metric, window_start)
    return made


def insert(
    cur: duckdb.DuckDBPyConnection,
    rows: pa.Table,
    made: pa.Table,
    block_of: np.ndarray,
    metric: str,
    window_start: datetime,
) -> None:
    """Insert the blocks `cut` made of `rows`, with their statistics."""
    cur.register("_wanka_blocks", made)
    cur.register("_wanka_rows", rows.append_column("block", pa.array(block_of)))
    try:
        cur.execute(_INSERT.format(blocks=BLOCKS), {"metric": metric, "start": window_start})
    finally:
        cur.unregister("_wanka_blocks")
        cur.unregister("_wanka_rows")


#: The blocks of `_wanka_blocks` (block, data) with their statistics over `_wanka_rows`
#: (each sample with its block).
_INSERT = """
INSERT INTO {blocks}
SELECT nextval('wanka.block_seq'), $metric, $start, s.series_lo, s.series_hi, s.ts_min, s.ts_max,
       s.batch_lo, s.batch_hi, s.samples, s.value_count, s.value_sum, s.value_min, s.value_max,
       s.value_first, s.value_last, b.data
FROM _wanka_blocks b JOIN (
    SELECT block, min(series_id) AS series_lo, max(series_id) AS series_hi,
           make_timestamptz(min(ts)) AS ts_min, make_timestamptz(max(ts)) AS ts_max,
           min(batch_id) AS batch_lo, max(batch_id) AS batch_hi, count(*) AS samples,
           count(value) AS value_count, sum(value) AS value_sum, min(value) AS value_min,
           max(value) AS value_max, arg_min(value, (ts, series_id)) AS value_first,
           arg_max(value, (ts, -series_id)) AS value_last
    FROM _wanka_rows GROUP BY block
) s ON s.block = b.block
ORDER BY b.block
"""


def cut(rows: pa.Table, block_samples: int = BLOCK_SAMPLES) -> tuple[pa.Table, np.ndarray]:
    """Cut `rows` (ordered by series then time) into blocks of whole series runs of about
    `block_samples` samples: a table of (block, data), and each row's block."""
    ids = rows["series_id"].to_numpy()
    cuts = tier_blocks.cuts(ids, block_samples)
    value = rows["value"]
    batch = rows["batch_id"]
    data = []
    block_of = np.zeros(len(ids), dtype=np.int64)
    for n, (lo, hi) in enumerate(itertools.pairwise(cuts)):
        block_of[lo:hi] = n
        data.append(
            blocks.encode(
                blocks.Samples(
                    series_id=ids[lo:hi],
                    ts=rows["ts"].slice(lo, hi - lo).to_numpy(),
                    value=_numbers(value.slice(lo, hi - lo), np.float64),
                    batch_id=_numbers(batch.slice(lo, hi - lo), np.int64),
                    value_null=_nulls(value.slice(lo, hi - lo)),
                    batch_null=_nulls(batch.slice(lo, hi - lo)),
                )
            )
        )
    made = pa.table(
        {
            "block": pa.array(range(len(data)), type=pa.int64()),
            "data": pa.array(data, type=pa.binary()),
        }
    )
    return made, block_of


def _numbers(column: pa.ChunkedArray, dtype: type) -> np.ndarray:
    return np.asarray(column.fill_null(0).to_numpy(), dtype=dtype)


def _nulls(column: pa.ChunkedArray) -> np.ndarray | None:
    return column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
