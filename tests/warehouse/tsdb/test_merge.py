"""Flushing the open window and cutting a closed window's blocks again
(warehouse/tsdb/compact.py's `flush`, warehouse/tsdb/merge.py): gpu_metrics gives the same
rows, bit for bit, at every pass; the blocks end as one pass over the window would cut them;
none of it is a change of gpu_metrics."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.tsdb.compacted import (
    FAR,
    METRICS,
    PER_HOST,
    T0,
    count,
    grid,
    refresh_per_host,
    rows,
)
from tests.warehouse.tsdb.compacted import table as samples_table
from tests.warehouse.tsdb.test_compact import DECODED, STATS, _same, deliveries
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import compact, merge, write
from warehouse.tsdb.append import append

FLUSH = timedelta(minutes=30)  # the tests below go by half hours


def _overlapping(cur: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return merge.pending(cur, FAR)


def _statistics_hold(cur: duckdb.DuckDBPyConnection) -> None:
    stored = cur.sql(f"SELECT block_id, {STATS} FROM wanka.gpu_blocks ORDER BY block_id").fetchall()
    decoded = cur.sql(DECODED).fetchall()
    assert len(stored) == len(decoded)
    for mine, theirs in zip(stored, decoded, strict=True):
        assert all(_same(a, b) for a, b in zip(mine, theirs, strict=True)), (mine, theirs)


@settings(max_examples=examples(0.2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    deliveries(),
    st.lists(st.integers(0, 8 * 60), min_size=1, max_size=4),
    st.sampled_from([1, 1000]),
)
def test_flushes_and_merges_keep_every_row_bit_for_bit(
    shared: duckdb.DuckDBPyConnection,
    parts: list[tuple[list[tuple[Any, ...]], list[int | None] | None]],
    passes_min: list[int],
    block_samples: int,
) -> None:
    """Appends with flushing passes between them (at minutes after T0), then a last pass once
    every window is closed: the rows are those appended at every step, nothing stays hot and
    no closed window's blocks overlap."""
    cur = shared
    write.clear(cur, "gpu_metrics")
    appended: Any = None
    moments = sorted(passes_min)
    for i, (piece, ids) in enumerate(parts):
        append(cur, samples_table(piece, ids))
        appended = rows(cur)
        if i < len(moments):
            now = T0 + timedelta(minutes=moments[i])
            compact.compact(cur, now=now, flush=FLUSH, block_samples=block_samples)
            assert rows(cur) == appended
            flushed = compact.closed_before(now, FLUSH, compact.FLUSH_GRACE)
            assert (
                count(
                    cur,
                    f"SELECT count(*) FROM wanka.gpu_samples WHERE ts < '{flushed.isoformat()}'",
                )
                == 0
            )
    compact.compact(cur, now=FAR, flush=FLUSH, block_samples=block_samples)
    compact.compact(cur, now=FAR, flush=FLUSH, block_samples=block_samples)  # the merges
    assert rows(cur) == appended
    assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0
    assert _overlapping(cur) == []
    _statistics_hold(cur)
    assert compact.compact(cur, now=FAR, flush=FLUSH) == []  # nothing left to do


def test_the_open_window_is_flushed_by_half_hours_and_merged_once_closed(eng: Engine) -> None:
    """Two hours of samples every 10 minutes: at 01:10 the first two half hours are blocks and
    the rest hot; once the window closes, its blocks are cut again, as many as one pass over it
    makes, and no refresh recomputes on the way."""
    cur = eng.cursor()
    append(cur, grid(2))
    everything = rows(cur)
    execute(cur, PER_HOST).read_all()
    changes = count(cur, "SELECT count(*) FROM wanka.table_changes")
    moved = compact.compact(cur, now=T0 + timedelta(minutes=70), flush=FLUSH)
    assert {(d.window, d.metric) for d in moved} == {(T0, m) for m in METRICS[:2]}
    assert count(cur, "SELECT min(ts) FROM wanka.gpu_samples") == T0 + timedelta(minutes=60)
    assert count(cur, "SELECT count(DISTINCT window_start) FROM wanka.gpu_blocks") == 1
    assert rows(cur) == everything
    compact.compact(cur, now=T0 + timedelta(minutes=100), flush=FLUSH)  # 01:00-01:30
    assert _overlapping(cur) != []  # the window is open: its pieces stay
    assert merge.pending(cur, compact.closed_before(T0 + timedelta(minutes=100))) == []
    done = compact.compact(cur, now=FAR, flush=FLUSH)  # the last half hour, then the merges
    assert [(d.metric, d.merged) for d in done] == [
        (m, merged) for merged in (False, True) for m in METRICS[:2]
    ]
    assert compact.compact(cur, now=FAR, flush=FLUSH) == []
    assert _overlapping(cur) == []
    assert rows(cur) == everything
    _statistics_hold(cur)
    per_metric = cur.sql("SELECT metric, count(*) FROM wanka.gpu_blocks GROUP BY ALL").fetchall()
    assert sorted(per_metric) == [(m, 1) for m in sorted(METRICS[:2])]
    assert count(cur, "SELECT count(*) FROM wanka.table_changes") == changes
    assert refresh_per_host(cur)["refresh_mode"] == "no_data"  # moving samples is no change


def test_late_samples_of_a_merged_window_are_merged_in(eng: Engine) -> None:
    cur = eng.cursor()
    append(cur, grid(2))
    compact.compact(cur, now=FAR, flush=FLUSH)  # moved and merged in one pass
    assert compact.compact(cur, now=FAR, flush=FLUSH) == []
    before = count(cur, "SELECT count(*) FROM wanka.gpu_blocks")
    late = samples_table([(T0 + timedelta(minutes=5, seconds=3), "h0", 0, METRICS[0], None, 9.5)])
    append(cur, late)
    everything = rows(cur)
    compact.compact(cur, now=FAR, flush=FLUSH)  # the late sample: one more block
    assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") == before + 1
    moved = compact.compact(cur, now=FAR, flush=FLUSH)  # cut again with it
    assert [(d.metric, d.merged, d.samples) for d in moved] == [(METRICS[0], True, 37)]
    assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") == before
    assert rows(cur) == everything


def test_a_cut_made_before_its_turn_is_made_again_if_the_blocks_changed(eng: Engine) -> None:
    """`cut` runs outside the write gate: its blocks are written only if the window still has
    the blocks it read. A late sample's block added in between makes `one` cut them again, with
    the late sample; unchanged, `one` writes what `cut` made."""
    cur = eng.cursor()
    append(cur, grid(2))
    compact.compact(cur, now=T0 + timedelta(minutes=70), flush=FLUSH)
    compact.compact(cur, now=T0 + timedelta(minutes=100), flush=FLUSH)
    compact.compact(cur, now=FAR)  # the rest of the window, unmerged: its blocks overlap
    metric = METRICS[0]
    ready = merge.cut(cur, T0, metric)
    assert ready is not None and len(ready.ids) > 1
    late = samples_table([(T0 + timedelta(minutes=5, seconds=3), "h0", 0, metric, None, 9.5)])
    append(cur, late)
    compact.compact(cur, now=FAR)  # the late sample: one more block, not among ready.ids
    everything = rows(cur)
    samples, _made, _size = merge.one(cur, T0, metric, ready=ready)
    assert samples == ready.rows.num_rows + 1
    assert rows(cur) == everything
    ready = merge.cut(cur, T0, METRICS[1])
    assert ready is not None
    assert merge.one(cur, T0, METRICS[1], ready=ready)[:2] == (
        ready.rows.num_rows,
        ready.made.num_rows,
    )
    assert rows(cur) == everything
    assert _overlapping(cur) == []
    _statistics_hold(cur)
