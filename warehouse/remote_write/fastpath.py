"""The vectorised decode of a WriteRequest in the shape Prometheus sends, or None to have the
upb path (`rows.Rows`) decode it instead.

Prometheus (Go's protobuf) writes every TimeSeries as its labels (field 1), then its samples
(field 2), each Sample as `value` (field 1, fixed64) then `timestamp` (field 2, varint), a
field left out when it is zero. upb splits the request into one bytes object per series (C);
numpy then walks all series at once, field by field: a dozen steps over 2,000 series rather
than a Python loop over every label and sample. Anything else — exemplars, native histograms,
fields out of that order, a length past its end, a sample outside the time window — makes it
return None, and the upb path, which reads any valid encoding and words every refusal, decodes
the request. The two give the same rows (`tests/warehouse/remote_write/test_fastpath.py`).

A series' key is the raw bytes of its label fields; a label set is decoded (and checked) by
the upb path's `Rows._resolve` only the first time those bytes are seen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np
from google.protobuf.message import DecodeError

from warehouse.remote_write.messages import RawTimeSeries, SeriesBytes
from warehouse.remote_write.rows import STALE_NAN_BITS, BadRequest, check_series_count

if TYPE_CHECKING:
    from warehouse.remote_write.rows import Decoded, Rows, Series

_LABEL_TAG, _SAMPLE_TAG, _VALUE_TAG, _TS_TAG = 0x0A, 0x12, 0x09, 0x10
_PAD = b"\x00" * 16


class _NotCanonical(Exception):
    """The request is not in Prometheus's shape: the upb path decodes it."""


def decode_fast(raw: bytes, rows: Rows) -> Decoded | None:
    """The rows of the inflated WriteRequest `raw`, or None (see the module docstring)."""
    try:
        parts = SeriesBytes.FromString(raw).timeseries
    except DecodeError:
        return None  # the upb path words the error
    try:
        return _walk(parts, rows)
    except _NotCanonical:
        return None


def _walk(parts: list[bytes], rows: Rows) -> Decoded:
    count = len(parts)
    check_series_count(count, rows.limits)
    lengths = np.fromiter(map(len, parts), np.int64, count)
    blob = b"".join(parts)
    buf = np.frombuffer(blob + _PAD, np.uint8)
    starts = np.zeros(count, np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    ends = starts + lengths
    labels_end = _skip_labels(buf, starts.copy(), ends)
    series_of, content, content_end = _samples(buf, labels_end, ends)
    values, bits, stamps = _sample_fields(buf, content, content_end)
    if len(values) > rows.limits.max_samples:
        raise BadRequest(f"more than {rows.limits.max_samples:,} samples in one request")
    if len(stamps) and (stamps.min() < rows.low or stamps.max() > rows.high):
        raise _NotCanonical  # the upb path names the series and the sample
    local = _local_sids(blob, starts, labels_end, rows)
    sids = local[series_of]
    stale = bits == STALE_NAN_BITS
    keep = ~stale
    rows.received = len(values)
    rows.samples = (sids[keep], stamps[keep], values[keep])
    rows.stale = (sids[stale], stamps[stale])
    return rows.finish()


def _varints(buf: np.ndarray, at: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The varints starting at `at` (at most `width` bytes each) and their lengths."""
    if not len(at):
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    first = buf[at]
    if not (first & 0x80).any():  # one byte each: label and sample lengths nearly always
        return first.astype(np.uint64), np.ones(len(at), np.int64)
    if at.max() + width > len(buf):
        raise _NotCanonical
    grid = buf[at[:, None] + np.arange(width)].astype(np.uint64)
    more = (grid & 0x80) != 0
    last = np.argmin(more, axis=1)
    if more[np.arange(len(at)), last].any():
        raise _NotCanonical  # no final byte within `width`
    used = np.arange(width) <= last[:, None]
    shifts = (7 * np.arange(width)).astype(np.uint64)
    values = (((grid & 0x7F) << shifts) * used).sum(axis=1, dtype=np.uint64)
    return values, last.astype(np.int64) + 1


def _skip_labels(buf: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Where each series' label fields end (its first sample field, or its end)."""
    active = np.flatnonzero(pos < ends)
    while len(active):
        at = pos[active]
        labelled = buf[at] == _LABEL_TAG
        active = active[labelled]
        if not len(active):
            break
        size, width = _varints(buf, pos[active] + 1, 5)
        pos[active] += 1 + width + size.astype(np.int64)
        if (pos[active] > ends[active]).any():
            raise _NotCanonical
        active = active[pos[active] < ends[active]]
    return pos


def _samples(
    buf: np.ndarray, labels_end: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sample field after the labels: its series, content start and end, in series order
    then arrival order. Any other field after the labels is not Prometheus's shape."""
    series, begin, finish, step = [], [], [], []
    pos = labels_end.copy()
    active = np.flatnonzero(pos < ends)
    n = 0
    while len(active):
        at = pos[active]
        if (buf[at] != _SAMPLE_TAG).any():
            raise _NotCanonical  # exemplars, histograms, or fields out of order
        size, width = _varints(buf, at + 1, 5)
        start = at + 1 + width
        stop = start + size.astype(np.int64)
        if (stop > ends[active]).any():
            raise _NotCanonical
        series.append(active)
        begin.append(start)
        finish.append(stop)
        step.append(np.full(len(active), n))
        pos[active] = stop
        active = active[stop < ends[active]]
        n += 1
    if not series:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    which, first, last, order = map(np.concatenate, (series, begin, finish, step))
    arrival = np.lexsort((order, which))
    return which[arrival], first[arrival], last[arrival]


def _sample_fields(
    buf: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, its bits, timestamp) of each Sample body `buf[start:end]`."""
    has_value = (start < end) & (buf[start] == _VALUE_TAG)
    grid = buf[(start + 1)[:, None] + np.arange(8)] if len(start) else np.empty((0, 8), np.uint8)
    bits = np.ascontiguousarray(grid).view("<u8").ravel() * has_value
    values = bits.view("<f8")
    at = start + 9 * has_value
    has_ts = (at < end) & (buf[at] == _TS_TAG)
    stamp, width = _varints(buf, at[has_ts] + 1, 10)
    stamps = np.zeros(len(start), np.int64)
    stamps[has_ts] = stamp.view(np.int64)
    at[has_ts] += 1 + width
    if (at != end).any():
        raise _NotCanonical
    return values, bits, stamps


def _local_sids(blob: bytes, starts: np.ndarray, labels_end: np.ndarray, rows: Rows) -> np.ndarray:
    """Each series' sid in `rows`, resolving label sets not seen before. C-level maps over the
    series: a steady feed finds every label set in the cache."""
    cache = rows.cache
    count = len(starts)
    keys = list(map(blob.__getitem__, map(slice, starts.tolist(), labels_end.tolist())))
    distinct = list(dict.fromkeys(keys))  # first-seen order
    found = list(map(cache.known_raw.get, distinct))
    if any(hit is None for hit in found):
        first: dict[bytes, int] = {}
        for index, key in enumerate(keys):
            first.setdefault(key, index)
        for at, (key, hit) in enumerate(zip(distinct, found, strict=True)):
            if hit is None:
                labels = tuple(RawTimeSeries.FromString(key).labels)
                hit = cache.known.get(labels) or rows._resolve(first[key], labels)
                with cache.lock:
                    cache.known_raw[key] = hit
                found[at] = hit
    rows.series.extend(cast("list[Series]", found))
    if len(distinct) == count:  # each series once, as Prometheus sends them
        return np.arange(count, dtype=np.int64)
    position = dict(zip(distinct, range(len(distinct)), strict=True))
    return np.fromiter(map(position.__getitem__, keys), np.int64, count)
