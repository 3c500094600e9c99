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

The serve scheduler also flushes the hot samples of each closed `FLUSH` (10 min) of the open
window, `FLUSH_GRACE` after it ends, into blocks of their window, so the hot table holds about a
quarter of an hour, not two: a dashboard's last hour reads at most that through DuckDB, and
DuckDB's buffers cache no more than that of the hot table. The hot table is in arrival order, all
metrics mixed (a remote_write request holds many), so a panel of one metric scans every hot row
of its time range: at 10,000 GPUs × 40 fields every 15 s that is 1.6M rows a minute, 56M with
30-minute flushes and 24M with these. The flushed blocks overlap in series, and cost more bytes
than one pass over the window (30 min windows: 1.18 B/sample against 1.14 at 1,000 GPUs, 60 s);
once the window closes, `merge` decodes its blocks and cuts them again as one pass would have,
in one transaction per window and metric (late samples' blocks too). Every sample is flushed
once and merged once, whatever `FLUSH` is: shorter flushes make more, smaller transactions.
The minute tier's rows of the open window are flushed with the samples (`FLUSHED_TIERS`) and
their blocks cut again once the window closes (`tier_merge`): they are a quarter as many as
the samples at 15 s scrapes, and DuckDB's buffers keep every page written until memory is
short. Left in the table until the window closed, they grew by ~36 MiB of pages an hour at
5,000 GPUs × 16 fields (the buffers by ~50 MiB an hour; ~250 MiB at bench_soak's 10,000 GPUs ×
40 fields); flushed, the table holds 10-25 minutes of them.

Window and block size were measured on the simulator's samples (1,000 GPUs, 60 s): 2 h windows
took 1.4 % fewer bytes than 1 h ones; blocks of 1,024 series took 1.7 % more than one block per
metric and window, of 256 series 3.6 % more. Blocks of about 2^20 samples (a metric's window of
8,700 series at 60 s, 2,200 at 15 s) cost next to nothing, and a reader of a few series decodes
one block of its metric and window (~10 ms), not all of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb
import pyarrow as pa

from warehouse.kernel.transactions import Turn, no_turn, transaction
from warehouse.tsdb import block_store, merge, tier_blocks, tier_merge
from warehouse.tsdb.relations import HOT, SERIES
from warehouse.tsdb.tiers import TIERS

WINDOW = timedelta(hours=2)
GRACE = timedelta(minutes=10)
FLUSH = timedelta(minutes=10)
FLUSH_GRACE = timedelta(minutes=5)
BLOCK_SAMPLES = block_store.BLOCK_SAMPLES
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
    merged: bool = False  # blocks of a closed window cut again (`merge`), not samples moved


def closed_before(now: datetime, window: timedelta = WINDOW, grace: timedelta = GRACE) -> datetime:
    """The start of the first window not yet closed at `now`.

    >>> closed_before(datetime(2026, 1, 1, 4, 5, tzinfo=UTC)).hour  # 02:00-04:00 is in grace
    2
    >>> closed_before(datetime(2026, 1, 1, 4, 15, tzinfo=UTC)).hour
    4
    """
    return _bucket(now - grace, window)


def pending(
    cur: duckdb.DuckDBPyConnection,
    before: datetime,
    window: timedelta = WINDOW,
    since: datetime | None = None,
) -> list[tuple[datetime, str]]:
    """The (window, metric) pairs with hot samples before `before` (and at or after `since`),
    oldest first."""
    low = "" if since is None else "AND s.ts >= ? "
    return [
        (w, m)
        for w, m in cur.execute(
            f"SELECT DISTINCT time_bucket(?::INTERVAL, s.ts, TIMESTAMPTZ 'epoch') AS w, r.metric "
            f"FROM {HOT} s JOIN {SERIES} r ON r.series_id = s.series_id "
            f"WHERE s.ts < ? {low}ORDER BY w, r.metric",
            [window, before] + ([] if since is None else [since]),
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
    flush: timedelta | None = None,
    flush_grace: timedelta = FLUSH_GRACE,
) -> list[Compacted]:
    """Move the hot samples of every closed window into blocks, then the tiers' rows of those
    windows, each transaction in a `turn` of its own; what was moved (a tier's with its table
    in `tier`). With `budget_s`, no transaction but the first starts once that many seconds
    have passed: the rest waits for the next call (the scheduler's pass must not stall its
    refreshes for the minutes a window of 10,000 GPUs takes).

    With `flush` (shorter than `window`), the hot samples of each part of the open window that
    long, `flush_grace` after it ends, go into blocks of their window too, and so do the rows of
    `FLUSHED_TIERS`; the blocks of closed windows that overlap in series are cut again (`merge`,
    and `tier_merge` for a tier's, with or without `flush`)."""
    now = now or datetime.now(UTC)
    before = closed_before(now, window, grace)
    ends = None if budget_s is None else time.monotonic() + budget_s
    work: list[tuple[str | None, datetime, str, timedelta]] = [
        (None, start, metric, window) for start, metric in pending(cur, before, window)
    ]
    if flush is not None and flush < window:
        flushed = closed_before(now, flush, flush_grace)
        work += [(None, s, m, flush) for s, m in pending(cur, flushed, flush, since=before)]
        work += [(MERGE, w, m, window) for w, m in merge.pending(cur, before)]
        for tier in FLUSHED_TIERS:
            work += [
                (tier, s, m, flush) for s, m in pending_tier(cur, tier, flushed, flush, before)
            ]
    for tier in TIERS:
        work += [(tier, w, m, window) for w, m in pending_tier(cur, tier, before, window)]
        work += [
            (TIER_MERGE + tier, w, m, window) for w, m in tier_merge.pending(cur, tier, before)
        ]
    tables = {of for of, *_ in work if of is None or of in TIERS}
    ids = {of: series_by_metric(cur, HOT if of is None else of) for of in tables}
    moved: list[Compacted] = []
    for of, start, metric, span in work:
        if moved and ends is not None and time.monotonic() >= ends:
            break  # one transaction at least, so that every pass moves something
        # a merge decodes and cuts before it takes the gate; it writes in its turn
        ready = merge.cut(cur, start, metric, block_samples) if of is MERGE else None
        with turn():
            if of is None:
                of_window = _bucket(start, window)
                chosen = ids[of].get(metric, _NONE)
                moved.append(one(cur, start, metric, chosen, span, block_samples, of_window))
            elif of is MERGE:
                samples, count, size = merge.one(cur, start, metric, block_samples, ready)
                moved.append(Compacted(start, metric, samples, count, size, merged=True))
            elif of.startswith(TIER_MERGE):
                tier = of[len(TIER_MERGE) :]
                rows, count, size = tier_merge.one(cur, tier, start, metric, block_samples)
                moved.append(Compacted(start, metric, rows, count, size, tier=tier, merged=True))
            else:
                chosen = ids[of].get(metric, _NONE)
                moved.append(
                    one_tier(cur, of, start, metric, chosen, span, block_samples,
                             _bucket(start, window))
                )  # fmt: skip
    return moved


MERGE = "merge"
#: Before a tier's table name: the tier's blocks of a closed window cut again (`tier_merge`).
TIER_MERGE = "merge:"
#: The tiers whose rows of the open window are frozen with its flushed samples: the minute
#: tier, whose rows are a quarter of the samples at 15 s scrapes (10,000 GPUs × 40 fields: 24M
#: rows an hour). An hour bucket stays open for an hour, and its tier has 1/60 of the rows.
FLUSHED_TIERS = ("wanka.gpu_tier_1m",)


def _bucket(at: datetime, window: timedelta) -> datetime:
    """The start of the window `at` falls in."""
    return at - (at - _EPOCH) % window


def series_by_metric(cur: duckdb.DuckDBPyConnection, table: str) -> dict[str, pa.Table]:
    """The series ids of `table`'s rows (the hot samples, or a tier's), by metric, read once a
    pass: each window and metric's statements then find their rows by these ids, not by a scan
    of the whole series dictionary, which grows with every job a label names (~800,000 series a
    day at 10,000 GPUs); with the scan, compaction's time grew by ~9 s with each day held."""
    found = cur.execute(
        f"SELECT r.metric, list(r.series_id) FROM (SELECT DISTINCT series_id FROM {table}) h "
        f"JOIN {SERIES} r ON r.series_id = h.series_id GROUP BY r.metric"
    ).fetchall()
    return {metric: pa.table({"series_id": pa.array(got, pa.int32())}) for metric, got in found}


def pending_tier(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    before: datetime,
    window: timedelta = WINDOW,
    since: datetime | None = None,
) -> list[tuple[datetime, str]]:
    """The (window, metric) pairs with rows of tier `table` before `before` (and at or after
    `since`), oldest first."""
    low = "" if since is None else "AND t.bucket >= ? "
    return [
        (w, m)
        for w, m in cur.execute(
            "SELECT DISTINCT time_bucket(?::INTERVAL, t.bucket, TIMESTAMPTZ 'epoch') AS w, "
            f"r.metric FROM {table} t JOIN {SERIES} r ON r.series_id = t.series_id "
            f"WHERE t.bucket < ? {low}ORDER BY w, r.metric",
            [window, before] + ([] if since is None else [since]),
        ).fetchall()
    ]


def one_tier(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    start: datetime,
    metric: str,
    ids: pa.Table,
    window: timedelta = WINDOW,
    block_rows: int = BLOCK_SAMPLES,
    window_start: datetime | None = None,
) -> Compacted:
    """Move the rows of one metric of tier `table` in [start, start + window) into blocks of
    the window starting at `window_start` (`start`), in one transaction (`ids`: the metric's
    series in the tier, `series_by_metric`'s)."""
    with transaction(cur):
        rows, size = tier_blocks.freeze(
            cur, table, start, metric, window, block_rows, ids, window_start
        )
    return Compacted(window_start or start, metric, rows, -(-rows // block_rows), size, tier=table)


def one(
    cur: duckdb.DuckDBPyConnection,
    start: datetime,
    metric: str,
    ids: pa.Table,
    window: timedelta = WINDOW,
    block_samples: int = BLOCK_SAMPLES,
    window_start: datetime | None = None,
) -> Compacted:
    """Move one window's hot samples of one metric into blocks, in one transaction: those of
    [start, start + window), into blocks of the window starting at `window_start` (`start`);
    `ids`: the metric's series among the hot samples (`series_by_metric`'s)."""
    where = (
        f"FROM {HOT} s WHERE s.series_id IN (SELECT series_id FROM {_IDS}) "
        "AND s.ts >= $start AND s.ts < $start + $window::INTERVAL"
    )
    given = {"start": start, "window": window}
    with transaction(cur), tier_blocks.registered(cur, _IDS, ids):
        rows = cur.sql(
            f"SELECT s.series_id, epoch_us(s.ts) AS ts, s.value, s.batch_id {where} "
            "ORDER BY s.series_id, s.ts, s.batch_id",
            params=given,
        ).to_arrow_table()
        if not rows.num_rows:
            return Compacted(window_start or start, metric, 0, 0, 0)
        made = block_store.store(cur, rows, metric, window_start or start, block_samples)
        cur.execute("INSERT INTO wanka.retention_running VALUES ('gpu_metrics')")
        [(moved,)] = cur.execute(f"DELETE {where}", given).fetchall()
        cur.execute("DELETE FROM wanka.retention_running WHERE table_name = 'gpu_metrics'")
        if moved != rows.num_rows:  # cannot happen in one snapshot; never lose a sample
            raise RuntimeError(f"compaction of {metric} at {start}: {moved} != {rows.num_rows}")
    size = sum(len(d) for d in made["data"].to_pylist())
    return Compacted(window_start or start, metric, rows.num_rows, made.num_rows, size)


_IDS = "_wanka_compact_ids"
_NONE = pa.table({"series_id": pa.array([], pa.int32())})
