"""The codec of the cold tier (warehouse/kernel/blocks.py): every sample comes back bit for bit,
and `wanka_block` in SQL keeps exactly the samples its bounds select."""

from __future__ import annotations

import gc
import struct
from collections.abc import Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Draw, examples
from warehouse.kernel import blocks

#: Doubles by their bits: NaNs of several payloads (quiet, signalling, negative), Prometheus's
#: staleness marker, ±Inf, ±0.0, the smallest and largest subnormals, the extremes.
SPECIAL_BITS = [
    0x7FF8000000000000,  # the usual quiet NaN
    0xFFF8000000000000,  # negative quiet NaN
    0x7FF8000000000001,  # quiet NaN with a payload
    0x7FF0000000000002,  # Prometheus staleness marker (a signalling NaN)
    0x7FF4000000000000,  # signalling NaN
    0xFFFFFFFFFFFFFFFF,  # all ones
    0x7FF0000000000000,  # +Inf
    0xFFF0000000000000,  # -Inf
    0x0000000000000000,  # +0.0
    0x8000000000000000,  # -0.0
    0x0000000000000001,  # smallest subnormal
    0x000FFFFFFFFFFFFF,  # largest subnormal
    0x800FFFFFFFFFFFFF,  # negative subnormal
    0x7FEFFFFFFFFFFFFF,  # largest finite
]
STALE = 0x7FF0000000000002
T0 = 1_764_547_200_000_000  # 2025-12-01 in µs
#: Inclusive bounds (None: open).
Range = tuple[int | None, int | None]
#: A block's samples, and the time range, batch range and series to keep of them.
Case = tuple[blocks.Samples, Range, Range, list[int] | None]


def _double(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


special = st.sampled_from(SPECIAL_BITS).map(_double)
plain = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)


@st.composite
def runs(draw: Draw, max_series: int = 6, max_run: int = 40) -> blocks.Samples:
    """Samples ordered by series then time: each series a run of gauges, counters with resets
    or special values, at regular, irregular or repeated times; some NULL values and batches."""
    ids = sorted(draw(st.sets(st.integers(1, 2**31 - 1), max_size=max_series)))
    series: list[int] = []
    ts: list[int] = []
    value: list[float] = []
    for sid in ids:
        n = draw(st.integers(1, max_run))
        start = draw(st.integers(-(10**12), 10**16))
        kind = draw(st.sampled_from(["regular", "irregular", "duplicates"]))
        if kind == "regular":
            step = draw(st.integers(1, 10**9))
            times = [start + i * step for i in range(n)]
        else:
            low = 0 if kind == "duplicates" else 1
            gaps = draw(st.lists(st.integers(low, 10**8), min_size=n, max_size=n))
            times = list(np.cumsum([start, *gaps[1:]]))
        shape = draw(st.sampled_from(["counter", "gauge", "special"]))
        if shape == "counter":
            steps = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
            resets = draw(st.sets(st.integers(0, n - 1), max_size=3))
            total = 0.0
            values = []
            for i, inc in enumerate(steps):
                total = float(inc) if i in resets else total + inc
                values.append(total)
        elif shape == "gauge":
            values = draw(st.lists(plain, min_size=n, max_size=n))
        else:
            values = draw(st.lists(st.one_of(special, plain), min_size=n, max_size=n))
        series += [sid] * n
        ts += [int(t) for t in times]
        value += values
    count = len(ts)
    batch = draw(
        st.one_of(
            st.just([7] * count),
            st.lists(st.integers(-(2**63), 2**63 - 1), min_size=count, max_size=count),
        )
    )
    masks = st.lists(st.booleans(), min_size=count, max_size=count).map(
        lambda m: np.array(m, dtype=bool)
    )
    value_null = draw(st.one_of(st.none(), masks))
    batch_null = draw(st.one_of(st.none(), masks))
    return blocks.Samples(
        series_id=np.array(series, dtype=np.int32),
        ts=np.array(ts, dtype=np.int64),
        value=np.array(value, dtype=np.float64),
        batch_id=np.array(batch, dtype=np.int64),
        value_null=value_null,
        batch_null=batch_null,
    )


def _nulls(mask: np.ndarray | None, count: int) -> np.ndarray:
    return np.zeros(count, dtype=bool) if mask is None else mask


def assert_same(got: blocks.Samples, want: blocks.Samples) -> None:
    """Equal sample for sample: ids, times and batch ids as integers, values by their bits;
    a NULL is a NULL whatever was stored under it."""
    assert len(got) == len(want)
    assert got.series_id.dtype == np.int32 and got.ts.dtype == np.int64
    np.testing.assert_array_equal(got.series_id, want.series_id)
    np.testing.assert_array_equal(got.ts, want.ts)
    value_null = _nulls(want.value_null, len(want))
    batch_null = _nulls(want.batch_null, len(want))
    np.testing.assert_array_equal(_nulls(got.value_null, len(got)), value_null)
    np.testing.assert_array_equal(_nulls(got.batch_null, len(got)), batch_null)
    np.testing.assert_array_equal(
        got.value.view(np.uint64)[~value_null], want.value.view(np.uint64)[~value_null]
    )
    np.testing.assert_array_equal(got.batch_id[~batch_null], want.batch_id[~batch_null])


@settings(max_examples=examples(2), deadline=None)
@given(runs())
def test_a_block_gives_back_every_sample_bit_for_bit(samples: blocks.Samples) -> None:
    assert_same(blocks.decode(blocks.encode(samples)), samples)


def test_empty_and_single_sample_blocks_and_every_special_value() -> None:
    empty = blocks.Samples(
        series_id=np.zeros(0, np.int32),
        ts=np.zeros(0, np.int64),
        value=np.zeros(0, np.float64),
        batch_id=np.zeros(0, np.int64),
    )
    assert_same(blocks.decode(blocks.encode(empty)), empty)
    one = blocks.Samples(
        series_id=np.array([5], np.int32),
        ts=np.array([T0], np.int64),
        value=np.array([STALE], np.uint64).view(np.float64),
        batch_id=np.array([9], np.int64),
    )
    got = blocks.decode(blocks.encode(one))
    assert_same(got, one)
    assert int(got.value.view(np.uint64)[0]) == STALE
    n = len(SPECIAL_BITS)
    every = blocks.Samples(
        series_id=np.repeat(np.array([3, 4], np.int32), n),
        ts=np.tile(T0 + np.arange(n, dtype=np.int64) * 15_000_000, 2),
        value=np.tile(np.array(SPECIAL_BITS, np.uint64).view(np.float64), 2),
        batch_id=np.arange(2 * n, dtype=np.int64),
        value_null=np.arange(2 * n) == n,  # one NULL, in the second series
        batch_null=np.arange(2 * n) % 5 == 0,
    )
    assert_same(blocks.decode(blocks.encode(every)), every)
    with pytest.raises(ValueError, match="not a wanka block"):
        blocks.decode(b"XXXX" + bytes(12))


# -- wanka_block in SQL -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(":memory:")
    blocks.register(connection)
    yield connection
    connection.close()


def _read_sql(
    con: duckdb.DuckDBPyConnection,
    data: bytes,
    ts: Range,
    batch: Range,
    series: list[int] | None,
) -> blocks.Samples:
    """The samples `wanka_block` keeps, as columns (µs bounds go in as TIMESTAMPTZ)."""
    table = con.sql(
        "SELECT unnest(wanka_block($data, make_timestamptz($t0), make_timestamptz($t1), "
        "$b0, $b1, $series::INTEGER[]), recursive := true)",
        params={
            "data": data,
            "t0": ts[0],
            "t1": ts[1],
            "b0": batch[0],
            "b1": batch[1],
            "series": series,
        },
    ).to_arrow_table()
    value, batch_id = table["value"], table["batch_id"]
    return blocks.Samples(
        series_id=table["series_id"].to_numpy().astype(np.int32),
        ts=table["ts"].cast(pa.int64()).to_numpy(),
        value=np.asarray(value.fill_null(0).to_numpy(), dtype=np.float64),
        batch_id=np.asarray(batch_id.fill_null(0).to_numpy(), dtype=np.int64),
        value_null=value.is_null().to_numpy(zero_copy_only=False),
        batch_null=batch_id.is_null().to_numpy(zero_copy_only=False),
    )


def _filtered(
    samples: blocks.Samples,
    ts: Range,
    batch: Range,
    series: list[int] | None,
) -> blocks.Samples:
    """What the bounds select, by numpy: inclusive ranges, a NULL batch outside any batch
    range, a NULL bound keeping everything."""
    keep = np.ones(len(samples), dtype=bool)
    if ts[0] is not None:
        keep &= samples.ts >= ts[0]
    if ts[1] is not None:
        keep &= samples.ts <= ts[1]
    batch_null = _nulls(samples.batch_null, len(samples))
    if batch[0] is not None:
        keep &= (samples.batch_id >= batch[0]) & ~batch_null
    if batch[1] is not None:
        keep &= (samples.batch_id <= batch[1]) & ~batch_null
    if series is not None:
        keep &= np.isin(samples.series_id, series)
    return blocks.Samples(
        samples.series_id[keep],
        samples.ts[keep],
        samples.value[keep],
        samples.batch_id[keep],
        _nulls(samples.value_null, len(samples))[keep],
        batch_null[keep],
    )


@st.composite
def bounded(draw: Draw) -> Case:
    """A block of SQL-range timestamps and batch ids, and bounds around and inside it."""
    samples = draw(runs())
    if len(samples):  # keep the times within what a TIMESTAMPTZ holds
        samples = blocks.Samples(
            samples.series_id,
            np.clip(samples.ts, 0, 10**16),
            samples.value,
            samples.batch_id // 4,  # room for a bound on either side
            samples.value_null,
            samples.batch_null,
        )

    def bound(column: np.ndarray, lo: int, hi: int) -> st.SearchStrategy[int | None]:
        near = list(column[:50]) if len(column) else []
        return st.one_of(
            st.none(),
            st.integers(lo, hi),
            st.sampled_from(near) if near else st.none(),
        ).map(lambda v: None if v is None else int(v))

    ts = (draw(bound(samples.ts, 0, 10**16)), draw(bound(samples.ts, 0, 10**16)))
    batch = (
        draw(bound(samples.batch_id, -(2**61), 2**61)),
        draw(bound(samples.batch_id, -(2**61), 2**61)),
    )
    ids = sorted(set(samples.series_id.tolist()))
    series = draw(
        st.one_of(
            st.none(),
            st.lists(st.one_of(st.sampled_from(ids), st.integers(1, 99)) if ids else st.integers()),
        )
    )
    if series is not None:
        series = [int(s) % 2**31 for s in series]
    return samples, ts, batch, series


@settings(max_examples=examples(1), deadline=None)
@given(bounded())
def test_wanka_block_keeps_what_its_bounds_select_bit_for_bit(
    con: duckdb.DuckDBPyConnection,
    case: Case,
) -> None:
    samples, ts, batch, series = case
    data = blocks.encode(samples)
    assert_same(_read_sql(con, data, ts, batch, series), _filtered(samples, ts, batch, series))


def test_wanka_block_reads_several_blocks_and_null_blobs_in_one_call(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """One call over a column of blocks: each row's list is its own block's, NULL gives none."""
    made = []
    for k in range(3):
        made.append(
            blocks.Samples(
                series_id=np.full(k + 1, k + 1, np.int32),
                ts=T0 + np.arange(k + 1, dtype=np.int64),
                value=np.array([STALE] * (k + 1), np.uint64).view(np.float64),
                batch_id=np.full(k + 1, 10 * k, np.int64),
                value_null=np.arange(k + 1) == 1 if k else None,
            )
        )
    con.execute("CREATE OR REPLACE TEMP TABLE b (n INTEGER, data BLOB)")
    con.executemany(
        "INSERT INTO b VALUES (?, ?)",
        [[0, blocks.encode(made[0])], [1, None]]
        + [[k + 1, blocks.encode(made[k])] for k in (1, 2)],
    )
    got = con.execute(
        "SELECT n, len(wanka_block(data, NULL, NULL, NULL, NULL, NULL)), "
        "list_transform(wanka_block(data, NULL, NULL, NULL, NULL, NULL), lambda x: x.series_id), "
        "list_transform(wanka_block(data, NULL, NULL, NULL, NULL, NULL), "
        "lambda x: x.value IS NULL) FROM b ORDER BY n"
    ).fetchall()
    assert got == [
        (0, 1, [1], [False]),
        (1, 0, [], []),
        (2, 2, [2, 2], [False, True]),
        (3, 3, [3, 3, 3], [False, True, False]),
    ]


def test_a_cursor_outliving_its_connection_object_still_decodes() -> None:
    """DuckDB keeps a function's body only as long as the connection object it was bound on,
    while that connection's cursors may outlive it (`Engine(path).cursor()`): a freed body made
    the call fail, or crash the process."""
    connection = duckdb.connect()
    blocks.register(connection)
    cur = connection.cursor()
    del connection
    gc.collect()
    data = blocks.encode(
        blocks.Samples(
            np.array([3, 3], np.int32), np.array([1, 2]), np.array([0.5, 1.5]), np.array([7, 7])
        )
    )
    got = cur.sql(
        "SELECT unnest(wanka_block($1, NULL, NULL, NULL, NULL, NULL), recursive := true)",
        params=[data],
    ).fetchall()
    assert [(s, v, b) for s, _, v, b in got] == [(3, 0.5, 7), (3, 1.5, 7)]
