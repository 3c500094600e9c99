"""Cutting a closed window's blocks again, as one compaction of the whole window would have.

A window's blocks overlap in series when its samples went into blocks more than once: the
scheduler flushes each closed 10 minutes of the open window (`compact.FLUSH`), and samples that
arrive after a window was compacted become one more block of it. Overlapping blocks cost bytes (each
series' run is cut into pieces, each with its own first value and deltas) and make a reader of
one series decode several blocks. Once the window is closed, `one` decodes every block of one
metric of it, orders the samples by series, time and batch, cuts them into blocks of whole
series runs and writes them with their statistics (`block_store.store`), then deletes the old
ones, in one transaction. Nothing else changes: the samples, their batch ids and the batch log
are those of before, so no dynamic table recomputes, and a reader sees the old blocks or the
new ones, never both.

The decoding and cutting need no transaction: `cut` does them beforehand (under `wanka serve`,
outside the write gate, so remote_write is not held up by them: a window of one metric at
10,000 GPUs every 15 s is 4.8M samples). `one` then writes the blocks `cut` made if the window's
blocks are still those it read (block ids are never used again), and cuts them itself if not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.kernel import blocks
from warehouse.kernel.transactions import transaction
from warehouse.tsdb import block_store
from warehouse.tsdb.relations import BLOCKS

#: (window, metric) pairs of closed windows with two blocks that share a series range.
_PENDING = f"""
SELECT DISTINCT window_start, metric FROM (
    SELECT window_start, metric, series_lo,
           max(series_hi) OVER (PARTITION BY window_start, metric ORDER BY series_lo, block_id
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_hi
    FROM {BLOCKS} WHERE window_start < $before
)
WHERE series_lo <= before_hi
ORDER BY window_start, metric
"""


def pending(cur: duckdb.DuckDBPyConnection, before: datetime) -> list[tuple[datetime, str]]:
    """The (window, metric) pairs of windows starting before `before` whose blocks overlap in
    series, oldest first."""
    return [(w, m) for w, m in cur.execute(_PENDING, {"before": before}).fetchall()]


@dataclass(frozen=True)
class Cut:
    """The blocks of one window and metric, cut again: the ids of those read, their samples
    in order, and the blocks made of them (with each sample's block)."""

    ids: tuple[int, ...]
    rows: pa.Table
    made: pa.Table
    block_of: np.ndarray


def cut(
    cur: duckdb.DuckDBPyConnection,
    window_start: datetime,
    metric: str,
    block_samples: int = block_store.BLOCK_SAMPLES,
) -> Cut | None:
    """The blocks of one window and metric, read and cut again in no transaction of its own
    (None when there are fewer than two)."""
    found = cur.execute(
        f"SELECT block_id, samples, data FROM {BLOCKS} "
        "WHERE metric = $metric AND window_start = $start ORDER BY block_id",
        {"metric": metric, "start": window_start},
    ).fetchall()
    if len(found) < 2:
        return None
    rows = _rows([blocks.decode(data) for _, _, data in found])
    expected = sum(int(n) for _, n, _ in found)
    if rows.num_rows != expected:  # a block that decodes to other than its count
        raise RuntimeError(
            f"merge of {metric} at {window_start}: {rows.num_rows} samples != {expected}"
        )
    made, block_of = block_store.cut(rows, block_samples)
    return Cut(tuple(int(i) for i, _, _ in found), rows, made, block_of)


def one(
    cur: duckdb.DuckDBPyConnection,
    window_start: datetime,
    metric: str,
    block_samples: int = block_store.BLOCK_SAMPLES,
    ready: Cut | None = None,
) -> tuple[int, int, int]:
    """Cut the blocks of one window and metric again, in one transaction: (samples, blocks
    made, their bytes). `ready`: what `cut` made of them before, written if the window's
    blocks are still the ones it read."""
    with transaction(cur):
        held = cur.execute(
            f"SELECT block_id FROM {BLOCKS} "
            "WHERE metric = $metric AND window_start = $start ORDER BY block_id",
            {"metric": metric, "start": window_start},
        ).fetchall()
        if ready is None or ready.ids != tuple(int(i) for (i,) in held):
            ready = cut(cur, window_start, metric, block_samples)
            if ready is None:
                return 0, len(held), 0
        block_store.insert(cur, ready.rows, ready.made, ready.block_of, metric, window_start)
        ids = ", ".join(str(block_id) for block_id in ready.ids)
        cur.execute(f"DELETE FROM {BLOCKS} WHERE block_id IN ({ids})")
    size = sum(len(d) for d in ready.made["data"].to_pylist())
    return ready.rows.num_rows, ready.made.num_rows, size


def _rows(parts: list[blocks.Samples]) -> pa.Table:
    """The samples of `parts` as one table ordered by series, time and batch (a NULL batch
    last, as compaction's ORDER BY puts it), NULL values and batches as NULLs again."""
    ids = np.concatenate([p.series_id for p in parts]).astype(np.int32)
    ts = np.concatenate([p.ts for p in parts]).astype(np.int64)
    value = np.concatenate([p.value for p in parts]).astype(np.float64)
    batch = np.concatenate([p.batch_id for p in parts]).astype(np.int64)
    sizes = [len(p) for p in parts]
    value_null = _mask([p.value_null for p in parts], sizes)
    batch_null = _mask([p.batch_null for p in parts], sizes)
    batch_key = batch if batch_null is None else np.where(batch_null, np.iinfo(np.int64).max, batch)
    order = np.lexsort((batch_key, ts, ids))
    return pa.table(
        {
            "series_id": pa.array(ids[order]),
            "ts": pa.array(ts[order]),
            "value": pa.array(value[order], mask=None if value_null is None else value_null[order]),
            "batch_id": pa.array(
                batch[order], mask=None if batch_null is None else batch_null[order]
            ),
        }
    )


def _mask(masks: list[np.ndarray | None], sizes: list[int]) -> np.ndarray | None:
    """The parts' NULL masks as one (None: no NULL in any part)."""
    if all(m is None for m in masks):
        return None
    return np.concatenate(
        [
            np.zeros(n, dtype=bool) if m is None else m.astype(bool)
            for m, n in zip(masks, sizes, strict=True)
        ]
    )
