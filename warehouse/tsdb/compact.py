"""Compaction: the samples of closed windows move from the hot table into compressed blocks.

A window is `WINDOW` (2 h) of sample time; it is closed once `GRACE` has passed since its end,
so samples that arrive a little late still land while it is hot. `compact` takes each closed
window's hot samples metric by metric, one transaction per window and metric:

1. the samples, ordered by series then time, are cut into blocks of whole series runs of about
   `BLOCK_SAMPLES` samples, each encoded by `warehouse.kernel.blocks`;
2. each block goes into wanka.gpu_blocks with its statistics (computed by DuckDB, so that they
   agree with a query over the decoded samples);
3. the hot samples are deleted under wanka.retention_running, so the change triggers do not log
   it: moving samples is not a change of gpu_metrics, and no dynamic table recomputes.

Killed half-way, the transaction rolls back and the window is still hot; the next pass does it
again. Samples that arrive for a window already compacted land hot and become one more block of
that window on the next pass. The batch ids of the samples go into the blocks, and the batch log
is left alone: a refresh behind a compaction finds its batches in the blocks.

Window and block size were measured on the simulator's samples (1,000 GPUs, 60 s): 2 h windows
took 1.4 % fewer bytes than 1 h ones; blocks of 1,024 series took 1.7 % more than one block per
metric and window, of 256 series 3.6 % more. Blocks of about 2^20 samples (a metric's window of
8,700 series at 60 s, 2,200 at 15 s) cost next to nothing, and a reader of a few series decodes
one block of its metric and window (~10 ms), not all of them.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.kernel import blocks
from warehouse.kernel.transactions import Turn, no_turn, transaction
from warehouse.tsdb import tier_blocks
from warehouse.tsdb.relations import BLOCKS, HOT, SERIES
from warehouse.tsdb.tiers import TIERS

WINDOW = timedelta(hours=2)
GRACE = timedelta(minutes=10)
BLOCK_SAMPLES = 1 << 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Compacted:
    """One window and metric moved into blocks."""

    window: datetime
    metric: str
    samples: int  # or a tier's rows
    blocks: int
    bytes: int
    tier: str | None = None  # the tier table, for a tier's rows


def closed_before(now: datetime, window: timedelta = WINDOW, grace: timedelta = GRACE) -> datetime:
    """The start of the first window not yet closed at `now`.

    >>> closed_before(datetime(2026, 1, 1, 4, 5, tzinfo=UTC)).hour  # 02:00-04:00 is in grace
    2
    >>> closed_before(datetime(2026, 1, 1, 4, 15, tzinfo=UTC)).hour
    4
    """
    edge = now - grace
    return edge - (edge - _EPOCH) % window


def pending(
    cur: duckdb.DuckDBPyConnection, before: datetime, window: timedelta = WINDOW
) -> list[tuple[datetime, str]]:
    """The (window, metric) pairs with hot samples before `before`, oldest first."""
    return [
        (w, m)
        for w, m in cur.execute(
            f"SELECT DISTINCT time_bucket(?::INTERVAL, s.ts, TIMESTAMPTZ 'epoch') AS w, r.metric "
            f"FROM {HOT} s JOIN {SERIES} r ON r.series_id = s.series_id "
            "WHERE s.ts < ? ORDER BY w, r.metric",
            [window, before],
        ).fetchall()
    ]


def compact(
    cur: duckdb.DuckDBPyConnection,
    *,
    now: datetime | None = None,
    window: timedelta = WINDOW,
    grace: timedelta = GRACE,
    block_samples: int = BLOCK_SAMPLES,
    turn: Turn = no_turn,
    budget_s: float | None = None,
) -> list[Compacted]:
    """Move the hot samples of every closed window into blocks, then the tiers' rows of those
    windows, each transaction in a `turn` of its own; what was moved (a tier's with its table
    in `tier`). With `budget_s`, no transaction but the first starts once that many seconds
    have passed: the rest waits for the next call (the scheduler's pass must not stall its
    refreshes for the minutes a window of 10,000 GPUs takes)."""
    before = closed_before(now or datetime.now(UTC), window, grace)
    ends = None if budget_s is None else time.monotonic() + budget_s
    work: list[tuple[str | None, datetime, str]] = [
        (None, start, metric) for start, metric in pending(cur, before, window)
    ]
    for tier in TIERS:
        work += [(tier, w, m) for w, m in pending_tier(cur, tier, before, window)]
    moved: list[Compacted] = []
    for of, start, metric in work:
        if moved and ends is not None and time.monotonic() >= ends:
            break  # one transaction at least, so that every pass moves something
        with turn():
            if of is None:
                moved.append(one(cur, start, metric, window, block_samples))
            else:
                moved.append(one_tier(cur, of, start, metric, window, block_samples))
    return moved


def pending_tier(
    cur: duckdb.DuckDBPyConnection, table: str, before: datetime, window: timedelta = WINDOW
) -> list[tuple[datetime, str]]:
    """The (window, metric) pairs with rows of tier `table` before `before`, oldest first."""
    return [
        (w, m)
        for w, m in cur.execute(
            "SELECT DISTINCT time_bucket(?::INTERVAL, t.bucket, TIMESTAMPTZ 'epoch') AS w, "
            f"r.metric FROM {table} t JOIN {SERIES} r ON r.series_id = t.series_id "
            "WHERE t.bucket < ? ORDER BY w, r.metric",
            [window, before],
        ).fetchall()
    ]


def one_tier(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    start: datetime,
    metric: str,
    window: timedelta = WINDOW,
    block_rows: int = BLOCK_SAMPLES,
) -> Compacted:
    """Move one window's rows of one metric of tier `table` into blocks, in one transaction."""
    with transaction(cur):
        rows, size = tier_blocks.freeze(cur, table, start, metric, window, block_rows)
    return Compacted(start, metric, rows, -(-rows // block_rows), size, tier=table)


def one(
    cur: duckdb.DuckDBPyConnection,
    start: datetime,
    metric: str,
    window: timedelta = WINDOW,
    block_samples: int = BLOCK_SAMPLES,
) -> Compacted:
    """Move one window's hot samples of one metric into blocks, in one transaction."""
    where = (
        f"FROM {HOT} s JOIN {SERIES} r ON r.series_id = s.series_id "
        "WHERE r.metric = $metric AND s.ts >= $start AND s.ts < $start + $window::INTERVAL"
    )
    given = {"metric": metric, "start": start, "window": window}
    with transaction(cur):
        rows = cur.sql(
            f"SELECT s.series_id, epoch_us(s.ts) AS ts, s.value, s.batch_id {where} "
            "ORDER BY s.series_id, s.ts, s.batch_id",
            params=given,
        ).to_arrow_table()
        if not rows.num_rows:
            return Compacted(start, metric, 0, 0, 0)
        made, block_of = _blocks(rows, block_samples)
        cur.register("_wanka_blocks", made)
        cur.register("_wanka_rows", rows.append_column("block", pa.array(block_of)))
        try:
            cur.execute(_INSERT.format(blocks=BLOCKS), {"metric": metric, "start": start})
        finally:
            cur.unregister("_wanka_blocks")
            cur.unregister("_wanka_rows")
        cur.execute("INSERT INTO wanka.retention_running VALUES ('gpu_metrics')")
        [(moved,)] = cur.execute(
            f"DELETE FROM {HOT} s USING {SERIES} r WHERE r.series_id = s.series_id "
            "AND r.metric = $metric AND s.ts >= $start AND s.ts < $start + $window::INTERVAL",
            given,
        ).fetchall()
        cur.execute("DELETE FROM wanka.retention_running WHERE table_name = 'gpu_metrics'")
        if moved != rows.num_rows:  # cannot happen in one snapshot; never lose a sample
            raise RuntimeError(f"compaction of {metric} at {start}: {moved} != {rows.num_rows}")
    size = sum(len(d) for d in made["data"].to_pylist())
    return Compacted(start, metric, rows.num_rows, made.num_rows, size)


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


def _blocks(rows: pa.Table, block_samples: int) -> tuple[pa.Table, np.ndarray]:
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
