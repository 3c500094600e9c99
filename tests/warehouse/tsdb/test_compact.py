"""Compaction (warehouse/tsdb/compact.py): closed windows move into compressed blocks and
gpu_metrics gives the same rows, bit for bit, before and after; refreshes and folds find
compacted batches; `wanka compact`; a decoding query can be cancelled."""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Draw, examples, invoke_wanka
from tests.warehouse.tsdb.compacted import (
    FAR,
    METRICS,
    PER_HOST,
    SPECIAL_BITS,
    T0,
    count,
    double,
    grid,
    refresh_per_host,
    rows,
    table,
)
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import compact, tiers, write
from warehouse.tsdb.append import append

# -- 2. lossless ------------------------------------------------------------------------------

value = st.one_of(
    st.none(),
    st.sampled_from(SPECIAL_BITS).map(double),
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.integers(0, 100).map(float),
)
moment = st.one_of(
    st.integers(0, 36).map(lambda k: T0 + timedelta(minutes=10 * k)),  # often the same time
    st.integers(0, 6 * 3600 * 10**6).map(lambda us: T0 + timedelta(microseconds=us)),
)
sample = st.tuples(
    moment,
    st.sampled_from(["h0", "h1", "h2"]),
    st.integers(0, 1),
    st.sampled_from(METRICS),
    st.sampled_from([None, '{"pod":"p","namespace":"ml"}']),
    value,
)


@st.composite
def deliveries(draw: Draw) -> list[tuple[list[tuple[Any, ...]], list[int | None] | None]]:
    """Samples in 1-3 appends, some given twice (the same series and time), each append with a
    batch of its own or with batch ids given (NULL among them)."""
    drawn = draw(st.lists(sample, min_size=1, max_size=60))
    again = draw(st.lists(st.sampled_from(drawn), max_size=5))
    drawn = drawn + again
    cuts = sorted(set(draw(st.lists(st.integers(1, len(drawn)), max_size=2))) | {len(drawn)})
    parts: list[tuple[list[tuple[Any, ...]], list[int | None] | None]] = []
    lo = 0
    for hi in cuts:
        piece = drawn[lo:hi]
        given_ids = draw(st.booleans())
        ids = (
            draw(
                st.lists(st.sampled_from([None, 5, 900]), min_size=len(piece), max_size=len(piece))
            )
            if given_ids
            else None
        )
        parts.append((piece, ids))
        lo = hi
    return parts


#: Each block's statistics, and the same over its decoded samples.
STATS = (
    "samples, value_count, value_sum, value_min, value_max, ts_min, ts_max, series_lo, "
    "series_hi, batch_lo, batch_hi"
)
DECODED = """
SELECT block_id, count(*), count(value), sum(value), min(value), max(value), min(ts), max(ts),
       min(series_id), max(series_id), min(batch_id), max(batch_id)
FROM (SELECT block_id, unnest(wanka_block(data, NULL, NULL, NULL, NULL, NULL), recursive := true)
      FROM wanka.gpu_blocks)
GROUP BY block_id ORDER BY block_id
"""


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (a sum or max over a NaN is NaN)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


@settings(max_examples=examples(0.2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deliveries(), st.sampled_from([1, 3, 1000]))
def test_compaction_keeps_every_row_bit_for_bit_and_each_block_states_its_samples(
    shared: duckdb.DuckDBPyConnection,
    parts: list[tuple[list[tuple[Any, ...]], list[int | None] | None]],
    block_samples: int,
) -> None:
    cur = shared
    write.clear(cur, "gpu_metrics")
    for piece, ids in parts:
        append(cur, table(piece, ids))
    before = rows(cur)
    assert sum(before.values()) == sum(len(p) for p, _ in parts)
    done = compact.compact(cur, now=FAR, block_samples=block_samples)
    assert sum(d.samples for d in done) == sum(before.values())
    assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0
    assert rows(cur) == before
    assert compact.compact(cur, now=FAR) == []  # nothing left to do
    # a block holds one metric and one window; its statistics are its decoded samples'
    stored = cur.sql(
        f"SELECT block_id, {STATS}, metric, window_start FROM wanka.gpu_blocks ORDER BY block_id"
    ).fetchall()
    decoded = cur.sql(DECODED).fetchall()
    assert len(stored) == len(decoded) == sum(d.blocks for d in done)
    for mine, theirs in zip(stored, decoded, strict=True):
        assert all(_same(a, b) for a, b in zip(mine[:12], theirs, strict=True)), (mine, theirs)
    wrong = cur.sql(
        "SELECT b.block_id FROM (SELECT block_id, metric, window_start, unnest(wanka_block("
        "data, NULL, NULL, NULL, NULL, NULL), recursive := true) FROM wanka.gpu_blocks) b "
        "JOIN wanka.gpu_series r USING (series_id) WHERE r.metric <> b.metric "
        "OR time_bucket(INTERVAL 2 HOUR, b.ts, TIMESTAMPTZ 'epoch') <> b.window_start"
    ).fetchall()
    assert wrong == []


# -- 3. late samples, and the refreshes over them ---------------------------------------------


def test_late_samples_become_another_block_and_compaction_alone_refreshes_nothing(
    eng: Engine,
) -> None:
    cur = eng.cursor()
    append(cur, grid(4))  # two windows, two metrics
    execute(cur, PER_HOST).read_all()
    changes = count(cur, "SELECT count(*) FROM wanka.table_changes")
    first = compact.compact(cur, now=FAR)
    assert count(cur, "SELECT count(*) FROM wanka.table_changes") == changes
    assert [(d.window, d.metric) for d in first] == [
        (T0 + timedelta(hours=h), m) for h in (0, 2) for m in METRICS[:2]
    ]
    assert refresh_per_host(cur)["refresh_mode"] == "no_data"  # moving samples is no change
    # late samples of the first window (a new host, and more of a known one)
    late = table(
        [(T0 + timedelta(minutes=m, seconds=7), "h1", 0, METRICS[0], None, 0.5) for m in (3, 50)]
        + [(T0 + timedelta(minutes=61), "h9", 1, METRICS[1], None, 2.0)]
    )
    before = rows(cur)
    append(cur, late)
    assert not before - rows(cur)  # the compacted rows are all still there, and
    assert sum((rows(cur) - before).values()) == 3  # the late ones beside them
    result = refresh_per_host(cur)
    assert result["refresh_mode"] == "incremental", result
    blocks_before = count(cur, "SELECT count(*) FROM wanka.gpu_blocks")
    with_late = rows(cur)
    changes = count(cur, "SELECT count(*) FROM wanka.table_changes")
    second = compact.compact(cur, now=FAR)
    assert [(d.window, d.metric, d.samples) for d in second] == [
        (T0, METRICS[0], 2),
        (T0, METRICS[1], 1),
    ]
    assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") == blocks_before + 2
    assert (
        count(cur, f"SELECT count(*) FROM wanka.gpu_blocks WHERE window_start = '{T0.isoformat()}'")
        == 4
    )  # the first pass's two, and one more per metric
    assert rows(cur) == with_late
    assert count(cur, "SELECT count(*) FROM wanka.table_changes") == changes
    result = refresh_per_host(cur)
    assert result["refresh_mode"] == "no_data", result
    # a full refresh over blocks only gives the same rows
    execute(cur, "REFRESH DYNAMIC TABLE per_host FULL").read_all()
    refresh_per_host(cur)


def test_a_budget_stops_a_pass_between_transactions_and_the_next_goes_on(eng: Engine) -> None:
    """With `budget_s` spent, no transaction but the first starts: the next passes move the
    rest; each transaction in its own turn."""
    cur = eng.cursor()
    append(cur, grid(4))  # two windows, two metrics: four transactions
    everything = rows(cur)
    turns: list[int] = []

    def turn() -> Any:
        turns.append(1)
        return contextlib.nullcontext()

    for done in (1, 2):
        moved = compact.compact(cur, now=FAR, budget_s=0.0, turn=turn)
        assert len(moved) == 1 and len(turns) == done  # one, then the budget is spent
    rest = compact.compact(cur, now=FAR, turn=turn)
    assert len(rest) == 2 and len(turns) == 4
    assert rows(cur) == everything


# -- 4. remote_write retried across a compaction ----------------------------------------------


def test_a_refresh_and_a_fold_behind_a_compaction_find_their_batches_in_the_blocks(
    eng: Engine,
) -> None:
    """Samples appended and compacted before the next refresh or fold are read from the blocks:
    the dynamic table and the tiers equal their recomputes, incrementally."""
    cur = eng.cursor()
    append(cur, grid(2))
    execute(cur, PER_HOST).read_all()
    tiers.fold(cur)
    for hours in (2, 4):  # the next windows, each compacted before anything reads it
        later = grid(2)
        later = later.set_column(0, "ts", pa.compute.add(later["ts"], pa.scalar(
            timedelta(hours=hours), pa.duration("us"))))  # fmt: skip
        append(cur, later)
        compact.compact(cur, now=FAR, block_samples=2)
        assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0
        result = refresh_per_host(cur)
        assert result["refresh_mode"] == "incremental", result
        tiers.fold(cur)
        for tier, recompute in tiers.RECOMPUTE.items():
            held = sorted(cur.sql(f"SELECT * FROM {tier}").fetchall(), key=repr)
            assert held == sorted(cur.sql(recompute).fetchall(), key=repr), tier


def test_wanka_compact_moves_closed_windows_and_says_what_it_moved(cli_db: Path) -> None:
    old = grid(2)
    old = old.set_column(0, "ts", pa.array([datetime(2020, 1, 1, tzinfo=UTC)] * len(old),
                                           pa.timestamp("us", tz="UTC")))  # fmt: skip
    with Engine(str(cli_db)) as eng:
        append(eng.cursor(), old)
        before = rows(eng.cursor())
    done = invoke_wanka("--db", str(cli_db), "compact")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("2020-01-01 00:00 DCGM_FI_DEV_GPU_UTIL: 36 samples in 1 blocks")
    assert lines[-1].startswith("compacted 72 samples of 2 window-metrics")
    with Engine(str(cli_db)) as eng:
        assert rows(eng.cursor()) == before
        assert count(eng.cursor(), "SELECT count(*) FROM wanka.gpu_samples") == 0


def test_a_query_decoding_blocks_can_be_cancelled(eng: Engine) -> None:
    """The decoder runs a chunk of blocks at a time: an interrupt (what the serve watchdog's
    time limit and a client's cancel send) stops a query that decodes block after block."""
    cur = eng.cursor()
    append(cur, grid(6, every_min=1, hosts=8))
    compact.compact(cur, now=T0 + timedelta(days=1))
    assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") > 0
    endless = (
        "SELECT sum(len(wanka_block(data, NULL, NULL, NULL, NULL, NULL))) "
        "FROM wanka.gpu_blocks, range(100000000)"
    )
    failed: list[BaseException] = []

    def run() -> None:
        try:
            cur.execute(endless).fetchall()
        except BaseException as error:  # the thread hands it to the test
            failed.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.5)
    assert worker.is_alive()  # still decoding
    cur.interrupt()
    worker.join(10)
    assert not worker.is_alive()
    assert failed and isinstance(failed[0], duckdb.InterruptException)
    cur.close()
