"""The columns of a block (warehouse/kernel/block_columns.py): decimal readings and counters
stored as integers or their steps, and series runs that repeat kept once, every sample back bit
for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Draw, examples
from tests.warehouse.kernel.test_blocks import assert_same
from warehouse.kernel import block_columns, blocks


@st.composite
def decimal_runs(draw: Draw) -> blocks.Samples:
    """Series runs of decimal readings (k digits after the point, up to ±2^53 as integers):
    gauges anywhere in their range, gauges near a level of their own, and counters that climb
    and reset, as DCGM's fields are."""
    k = draw(st.integers(0, 6))
    top = draw(st.sampled_from([100, 10**6, 2**53 - 1]))
    counts = draw(st.lists(st.integers(1, 30), min_size=1, max_size=5))
    ints = []
    for n in counts:
        if draw(st.booleans()):  # a counter: steps up, now and then back to a low value
            steps = draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
            run = np.cumsum(steps) + draw(st.integers(0, top // 2))
            if n > 2 and draw(st.booleans()):
                run[n // 2 :] -= run[n // 2] - draw(st.integers(0, 5))
            ints.append(np.clip(run, -top, top))
        elif draw(st.booleans()):  # near a level of its own, as a GPU's temperature is
            level = draw(st.integers(-top + 50, top - 50))
            noise = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
            ints.append(level + np.array(noise))
        else:
            ints.append(np.array(draw(st.lists(st.integers(-top, top), min_size=n, max_size=n))))
    values = np.concatenate(ints).astype(np.int64) / 10.0**k
    if draw(st.booleans()):  # a -0.0 among them: not an integer's decimal, so the bits go in
        values[draw(st.integers(0, len(values) - 1))] = -0.0
    total = len(values)
    return blocks.Samples(
        series_id=np.repeat(np.arange(len(counts), dtype=np.int32), counts),
        ts=np.arange(total, dtype=np.int64) * 15_000_000,
        value=values,
        batch_id=np.full(total, 3, dtype=np.int64),
    )


@settings(max_examples=examples(2), deadline=None)
@given(decimal_runs())
def test_decimal_readings_and_counters_come_back_bit_for_bit(samples: blocks.Samples) -> None:
    """Stored as integers, their steps along each series or each series' median and the
    integers less it, when smaller: still every bit. Each integer form on its own, too, chosen
    or not."""
    assert_same(blocks.decode(blocks.encode(samples)), samples)
    found = block_columns.decimal(samples.value)
    if found is None:
        return
    k, ints = found
    starts = np.flatnonzero(np.diff(samples.series_id, prepend=-1))
    runs = np.diff(np.append(starts, len(ints))).astype(np.uint32)
    got = block_columns.unpack_float(
        b"o", memoryview(block_columns.by_median(ints, starts, runs)), k, runs
    )
    np.testing.assert_array_equal(got.view(np.uint64), samples.value.view(np.uint64))


def test_decimal_readings_are_stored_as_integers_when_that_is_smaller() -> None:
    rng = np.random.default_rng(5)
    for values in (
        np.round(rng.normal(300, 20, 4000), 3),  # watts to the milliwatt
        np.cumsum(rng.integers(900, 1100, 4000)) * 1.0 + np.repeat([0, 5e9, 1e9, 7e9], 1000),
    ):
        samples = blocks.Samples(
            np.repeat(np.arange(4, dtype=np.int32), 1000),
            np.tile(np.arange(1000, dtype=np.int64), 4),
            values,
            np.zeros(4000, dtype=np.int64),
        )
        data = blocks.encode(samples)
        code, packed, _k = block_columns.pack_float(values, np.arange(0, 4000, 1000))
        assert code == data[19:20] and code in (b"k", b"K", b"o")  # the value column's, after ts'
        assert len(packed) < len(block_columns.pack(values))  # fewer bytes than the floats' bits
        assert_same(blocks.decode(data), samples)


def test_readings_near_each_series_level_are_stored_as_medians_and_offsets() -> None:
    """400 GPUs' temperatures, each near a level of its own: the runs' medians and what each
    reading is off its median take fewer bytes than the integers or their steps, and come back
    bit for bit; medians that do not match the runs are an error, not wrong readings."""
    rng = np.random.default_rng(7)
    levels = np.repeat(rng.integers(30, 80, 400), 120)
    values = (levels + rng.integers(-2, 3, 400 * 120)).astype(np.float64)
    starts = np.arange(0, 400 * 120, 120)
    code, packed, k = block_columns.pack_float(values, starts)
    assert (code, k) == (b"o", 0)
    ints = values.astype(np.int64)
    steps = np.diff(ints, prepend=np.int64(0))
    steps[starts] = ints[starts]
    assert len(packed) < min(len(block_columns.pack(ints)), len(block_columns.pack(steps)))
    runs = np.full(400, 120, dtype=np.uint32)
    got = block_columns.unpack_float(code, memoryview(packed), k, runs)
    np.testing.assert_array_equal(got.view(np.uint64), values.view(np.uint64))
    with pytest.raises(ValueError, match="medians"):
        block_columns.unpack_float(code, memoryview(packed), k, runs[:-1])


def test_run_medians_are_each_runs_middle_value() -> None:
    rng = np.random.default_rng(3)
    runs = rng.integers(1, 9, 300)
    starts = np.cumsum(runs) - runs
    for span in (100, 2**45):  # by sorted keys; too wide for them: the rounded means
        ints = rng.integers(-span, span, int(runs.sum()))
        got = block_columns.run_medians(ints, starts, runs)
        pieces = [np.sort(ints[a : a + r]) for a, r in zip(starts, runs, strict=True)]
        if span == 100:
            assert got.tolist() == [int(p[(len(p) - 1) // 2]) for p in pieces]
        else:
            assert got.tolist() == [round(float(np.mean(p))) for p in pieces]


@st.composite
def scrapes(draw: Draw) -> blocks.Samples:
    """Series runs whose timestamps and batch ids repeat other runs' — the series of one scrape
    share its time, those of one delivery its batch — drawn from a few runs, some lengths cut
    short, some runs of their own, with NULL batches here and there."""
    pool = draw(
        st.lists(
            st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=12),
            min_size=1,
            max_size=3,
        )
    )
    chosen = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=12))
    ts_runs, batch_runs = [], []
    for at in chosen:
        run = sorted(pool[at])
        if draw(st.integers(0, 3)) == 0:  # a series that came late or left early
            run = run[: draw(st.integers(1, len(run)))]
        ts_runs.append(run)
        own = draw(st.booleans())
        batch_runs.append(
            [draw(st.integers(-(2**63), 2**63 - 1)) for _ in run] if own else [at] * len(run)
        )
    count = sum(len(r) for r in ts_runs)
    batch_null = draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=count, max_size=count)))
    return blocks.Samples(
        series_id=np.repeat(np.arange(len(chosen), dtype=np.int32), [len(r) for r in ts_runs]),
        ts=np.array([t for r in ts_runs for t in r], dtype=np.int64),
        value=np.arange(count, dtype=np.float64) / 3,
        batch_id=np.array([b for r in batch_runs for b in r], dtype=np.int64),
        batch_null=None if batch_null is None else np.array(batch_null, dtype=bool),
    )


@settings(max_examples=examples(2), deadline=None)
@given(scrapes())
def test_runs_that_repeat_come_back_bit_for_bit(samples: blocks.Samples) -> None:
    """Kept once and pointed at, or as they are, whichever is fewer bytes: every sample back,
    and every column that has repeated runs back from them alone."""
    data = blocks.encode(samples)
    assert_same(blocks.decode(data), samples)
    ids, runs, ts, _ = blocks.decode_samples(data)
    np.testing.assert_array_equal(np.repeat(ids, runs), samples.series_id)
    np.testing.assert_array_equal(ts.expand(), samples.ts)
    np.testing.assert_array_equal(ts.lengths[ts.which], runs)
    starts = np.cumsum(runs) - runs
    for column in (samples.ts, samples.batch_id):
        repeated = block_columns.repeats(column, starts, runs)
        if repeated is not None:
            got = block_columns.unpack_int(b"r", memoryview(repeated), runs)
            np.testing.assert_array_equal(got, column)


def test_timestamps_and_batches_shared_by_series_are_kept_once() -> None:
    """2,000 series scraped together at 15 s for 2 h, in 4 deliveries: each column's repeated
    runs take far fewer bytes than the column as it is."""
    series, per = 2_000, 480
    ts = np.tile(1_700_000_000_000_000 + np.arange(per, dtype=np.int64) * 15_000_000, series)
    batch = np.tile(np.repeat(np.arange(4, dtype=np.int64), per // 4), series)
    samples = blocks.Samples(
        np.repeat(np.arange(series, dtype=np.int32), per),
        ts,
        np.random.default_rng(1).normal(300, 20, series * per).round(3),
        batch,
    )
    starts = np.arange(0, series * per, per)
    runs = np.full(series, per, dtype=np.uint32)
    for column in (ts, batch):
        code, packed, _k = block_columns.pack_int(column, starts, runs)
        assert code == b"r"
        assert len(packed) * 20 < len(block_columns.pack(column))
    data = blocks.encode(samples)
    assert data[16:17] == b"r" and data[22:23] == b"r"  # ts', then batch ids' column type
    assert_same(blocks.decode(data), samples)
