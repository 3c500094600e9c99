"""The minute tier's rows of the open window flushed with the samples, and a closed window's
tier blocks cut again (warehouse/tsdb/compact.py's `FLUSHED_TIERS`, tier_merge.py): the tier
views give the same rows at every pass, and the blocks end as one freeze of the window cuts
them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.tsdb.compacted import FAR, METRICS, T0, count, table
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.tsdb import compact, tier_merge, tiers, write
from warehouse.tsdb.append import append

FLUSH = timedelta(minutes=30)
MINUTES, HOURS = "wanka.gpu_tier_1m", "wanka.gpu_tier_1h"
VIEWS = ("gpu_metrics_1m", "gpu_metrics_1h")
BLOCKS = (
    "SELECT tier, metric, window_start, series_lo, series_hi, bucket_min, bucket_max, rows, data "
    "FROM wanka.tier_blocks ORDER BY ALL"
)


def _samples(minutes: int, every_s: int = 20, hosts: int = 2) -> list[tuple[Any, ...]]:
    """Samples every `every_s` seconds from T0 (three a minute: the minute tier keeps them),
    each host, GPU 0, two metrics; a NULL value now and then."""
    found = []
    for k in range(minutes * 60 // every_s):
        for h in range(hosts):
            for m in range(2):
                value = None if (k + h + m) % 17 == 0 else float((k * 7 + h * 3 + m) % 50) / 2
                at = T0 + timedelta(seconds=k * every_s)
                found.append((at, f"h{h}", 0, METRICS[m], None, value))
    return found


def _views(cur: duckdb.DuckDBPyConnection) -> list[list[tuple[Any, ...]]]:
    return [cur.sql(f"SELECT * FROM {v} ORDER BY ALL").fetchall() for v in VIEWS]


def _hot_minutes(cur: duckdb.DuckDBPyConnection, before: Any) -> int:
    return int(count(cur, f"SELECT count(*) FROM {MINUTES} WHERE bucket < '{before.isoformat()}'"))


@settings(max_examples=examples(0.2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, 5 * 60), min_size=1, max_size=4),
    st.integers(1, 4),
    st.sampled_from([1, 7, 1000]),
)
def test_flushed_and_merged_tiers_read_the_same_at_every_pass(
    warehouses: Warehouses, passes_min: list[int], appends: int, block_rows: int
) -> None:
    """Four hours of samples in `appends` parts, folded, with flushing passes between them
    (at minutes after T0), then the passes once every window is closed: the tier views read
    the same rows as the tiers folded and never compacted, no minute of a flushed span stays in
    the table, and the blocks end as one freeze of each window, without flushes, cuts them."""
    every = _samples(4 * 60)
    step = -(-len(every) // appends)
    moments = sorted(passes_min)
    with warehouses.engine() as eng:
        cur = eng.cursor()
        for i in range(appends):
            append(cur, table(every[i * step : (i + 1) * step]))
            tiers.fold(cur)
            expected = _views(cur)
            if i < len(moments):
                now = T0 + timedelta(minutes=moments[i])
                compact.compact(cur, now=now, flush=FLUSH, block_samples=block_rows)
                assert _views(cur) == expected
                flushed = compact.closed_before(now, FLUSH, compact.FLUSH_GRACE)
                assert _hot_minutes(cur, flushed) == 0
        for _ in range(2):  # the closed windows, then their merges
            compact.compact(cur, now=FAR, flush=FLUSH, block_samples=block_rows)
        assert _views(cur) == expected
        assert count(cur, f"SELECT count(*) FROM {MINUTES}") == 0
        assert all(tier_merge.pending(cur, tier, FAR) == [] for tier in (MINUTES, HOURS))
        merged = cur.sql(BLOCKS).fetchall()
        assert compact.compact(cur, now=FAR, flush=FLUSH) == []  # nothing left to do
    with warehouses.engine() as eng:  # the same samples, compacted once, without flushes
        cur = eng.cursor()
        append(cur, table(every))
        tiers.fold(cur)
        compact.compact(cur, now=FAR, block_samples=block_rows)
        assert cur.sql(BLOCKS).fetchall() == merged


def test_a_refrozen_bucket_is_merged_back_once_its_window_closes(
    warehouses: Warehouses,
) -> None:
    """A late sample in a flushed span thaws its block; the next flush freezes the rows again
    (blocks that overlap), and the window's close cuts them into one freeze's blocks."""
    with warehouses.engine() as eng:
        cur = eng.cursor()
        append(cur, table(_samples(90)))
        tiers.fold(cur)
        compact.compact(cur, now=T0 + timedelta(minutes=100), flush=FLUSH)
        held = count(cur, "SELECT count(*) FROM wanka.tier_blocks WHERE tier = 'wanka.gpu_tier_1m'")
        assert held > 0 and _hot_minutes(cur, T0 + timedelta(minutes=60)) == 0
        late = (T0 + timedelta(minutes=5, seconds=7), "h0", 0, METRICS[0], None, 99.5)
        append(cur, table([late]))
        tiers.fold(cur)
        assert _hot_minutes(cur, T0 + timedelta(minutes=60)) > 0  # thawed
        expected = _views(cur)
        compact.compact(cur, now=T0 + timedelta(minutes=100), flush=FLUSH)
        assert _hot_minutes(cur, T0 + timedelta(minutes=60)) == 0
        assert tier_merge.pending(cur, MINUTES, FAR) != []
        assert tier_merge.pending(cur, MINUTES, T0) == []  # the window is open: it waits
        done = compact.compact(cur, now=FAR, flush=FLUSH)
        assert any(d.merged and d.tier == MINUTES for d in done)
        assert tier_merge.pending(cur, MINUTES, FAR) == []
        assert _views(cur) == expected
        row = cur.sql(
            "SELECT value_max FROM gpu_metrics_1m WHERE host = 'h0' AND metric = ? AND bucket = ?",
            params=[METRICS[0], T0 + timedelta(minutes=5)],
        ).fetchall()
        assert row == [(99.5,)]


def test_clearing_the_samples_clears_the_tiers_blocks_too(eng: Engine) -> None:
    """`write.clear` (the demo rebuilt over a warehouse) leaves no tier row in a block: a
    minute of it would come back with the next fold."""
    cur = eng.cursor()
    append(cur, table(_samples(60)))
    tiers.fold(cur)
    compact.compact(cur, now=FAR)
    assert count(cur, "SELECT count(*) FROM wanka.tier_blocks") > 0
    write.clear(cur, "gpu_metrics")
    assert count(cur, "SELECT count(*) FROM wanka.tier_blocks") == 0
    assert _views(cur) == [[], []]
