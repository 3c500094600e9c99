"""The vectorised decode gives the rows the upb path gives, or leaves the request to it."""

from __future__ import annotations

import time
from typing import Any

import cramjam
import pyarrow as pa
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st

from tests.warehouse.remote_write.support import STALE, dcgm_labels
from warehouse.ingest.models import ModelNames
from warehouse.remote_write import decode as d
from warehouse.remote_write import fastpath
from warehouse.remote_write import rows as r
from warehouse.remote_write.messages import RawWriteRequest, WriteRequest

NOW = int(time.time() * 1000)


def both(raw: bytes) -> tuple[r.Decoded | None, r.Decoded | BaseException]:
    """(the fast path's rows or None, the upb path's rows or its error) for `raw`."""
    limits, window = r.Limits(), (NOW - 86_400_000, NOW + 3_600_000)
    fast_cache, slow_cache = r.SeriesCache(ModelNames({})), r.SeriesCache(ModelNames({}))
    try:
        fast = fastpath.decode_fast(raw, r.Rows(fast_cache, limits, *window))
    except r.BadRequest as error:
        fast = None
        fast_error: BaseException | None = error
    else:
        fast_error = None
    try:
        request = RawWriteRequest.FromString(raw)
        rows = r.Rows(slow_cache, limits, *window)
        for index, one in enumerate(request.timeseries):
            rows.add(index, one)
        slow: r.Decoded | BaseException = rows.finish()
    except (r.BadRequest, DecodeError) as error:
        slow = error
    if fast_error is not None:
        assert isinstance(slow, r.BadRequest), (fast_error, slow)
    return fast, slow


def table(rows: r.Decoded) -> tuple[list[Any], ...]:
    """The rows as comparable lists: each sample with its series' columns."""
    series = rows.series.drop(["series_id"]).sort_by("sid")
    by_sid = {r["sid"]: tuple(v for k, v in r.items() if k != "sid") for r in series.to_pylist()}
    samples = [
        (by_sid[r["sid"]], r["ts"], r["value"] if r["value"] == r["value"] else "nan")
        for r in rows.samples.to_pylist()
    ]
    stale = [(by_sid[r["sid"]], r["ts"]) for r in rows.stale.to_pylist()]
    return samples, stale, [rows.received]


label_sets = st.lists(
    st.tuples(
        st.sampled_from(["DCGM_FI_DEV_GPU_UTIL", "node_load1", "up"]),
        st.integers(0, 3),
        st.integers(0, 7),
        st.sampled_from(["", "x", "é" * 70]),  # a 2-byte length once over 127 bytes
    ),
    min_size=1,
    max_size=6,
)
samples = st.lists(
    st.tuples(
        st.one_of(st.just(NOW), st.integers(NOW - 3_600_000, NOW), st.just(0), st.just(-5)),
        st.one_of(st.floats(allow_nan=True), st.just(0.0), st.just(STALE)),
    ),
    max_size=4,
)


@given(series=label_sets, per_series=st.lists(samples, min_size=6, max_size=6))
def test_the_fast_path_equals_the_upb_path(
    series: list[tuple[str, int, int, str]], per_series: list[list[tuple[int, float]]]
) -> None:
    request = WriteRequest()
    for (metric, host, gpu, extra), points in zip(series, per_series, strict=False):
        value: Any
        one = request.timeseries.add()
        for name, value in dcgm_labels(host, gpu, metric) + [("zz", extra)] * bool(extra):
            one.labels.add(name=name, value=value)
        for ts, value in points:
            one.samples.add(timestamp=ts, value=value)
    fast, slow = both(request.SerializeToString())
    if fast is None:
        return  # left to the upb path (e.g. a sample outside the window)
    assert not isinstance(slow, BaseException)
    assert table(fast) == table(slow)


@given(st.binary(max_size=200))
def test_any_bytes_either_decode_the_same_or_are_left_to_the_upb_path(raw: bytes) -> None:
    fast, slow = both(raw)
    if fast is not None:
        assert not isinstance(slow, BaseException), slow
        assert table(fast) == table(slow)


def test_exemplars_and_histograms_are_left_to_the_upb_path() -> None:
    request = WriteRequest()
    one = request.timeseries.add()
    one.labels.add(name="__name__", value="m")
    one.samples.add(timestamp=NOW, value=1.0)
    one.histograms.append(b"\x08\x01")
    raw = request.SerializeToString()
    assert both(raw)[0] is None
    rows = d.decode(
        bytes(cramjam.snappy.compress_raw(raw)), r.SeriesCache(ModelNames({})), r.Limits()
    )
    assert (rows.histograms, rows.samples.num_rows) == (1, 1)
    assert isinstance(rows.samples, pa.Table)
