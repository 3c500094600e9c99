"""A remote_write body (snappy block format around a protobuf WriteRequest) into rows.

Everything a request holds is checked before anything is stored, so a bad request is refused
whole (HTTP 400: Prometheus does not retry it) and nothing of it is half-written:

- the body: snappy's block format (not the framed one), at most `Limits.max_decoded_bytes`
  once decompressed (read from the block's header before inflating it);
- the message: a WriteRequest; at most `Limits.max_series` series and `Limits.max_samples`
  samples; every series with a `__name__`, label names valid Prometheus names, no name twice,
  names and values within `Limits.max_label_bytes`;
- timestamps: from `Limits.max_age` before the server's clock to `Limits.max_ahead` after it.

Values are kept as sent, NaN and ±Inf included, except Prometheus's staleness marker (the NaN
with bits 0x7ff0000000000002), which ends a series: it goes to `stale`, not to the values.
A series with the same labels twice in one request, or a sample twice, is stored once (the
first).
"""

from __future__ import annotations

import re
import struct
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import cramjam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.message import DecodeError

from warehouse.errors import UserError
from warehouse.ingest.models import ModelNames
from warehouse.remote_write import labels as mapping
from warehouse.remote_write.messages import Label, RawWriteRequest

STALE_NAN_BITS = 0x7FF0000000000002
_STALE = struct.pack("<Q", STALE_NAN_BITS)
_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_TS = pa.timestamp("us", tz="UTC")
Pairs = tuple[tuple[str, str], ...]


class BadRequest(UserError):
    """A request that can never be stored as sent (HTTP 400)."""


@dataclass(frozen=True)
class Limits:
    max_decoded_bytes: int = 64 << 20
    max_series: int = 100_000
    max_samples: int = 1_000_000
    max_label_bytes: int = 16 << 10
    max_labels: int = 100
    max_age: timedelta = timedelta(days=365)
    max_ahead: timedelta = timedelta(hours=1)


@dataclass
class Decoded:
    """The rows of one request (or several, `merge`d): its distinct series, and its samples and
    staleness markers as (series id local to these rows, ts, value)."""

    series: pa.Table  # sid, metric, host, gpu, uuid, model, labels, dcgm, all_labels
    samples: pa.Table  # sid, ts, value
    stale: pa.Table  # sid, ts
    received: int = 0  # float samples received, staleness markers included
    histograms: int = 0  # native histogram samples: not stored, counted
    requests: int = 1


class SeriesCache:
    """Label sets seen before (as raw Label bytes) and what they map to, for the process: a
    steady stream repeats the same series every scrape. Cleared when it outgrows `size`."""

    def __init__(self, models: ModelNames, size: int = 2_000_000) -> None:
        self.models = models
        self.size = size
        self.known: dict[tuple[bytes, ...], Series] = {}
        self.lock = threading.Lock()


@dataclass(frozen=True)
class Series:
    metric: str
    gpu: mapping.GpuColumns | None  # None: not a DCGM series with a host (prom_samples)
    all_labels: str | None  # every label but __name__, as JSON


def decompress(body: bytes, limits: Limits) -> bytes:
    """Inflate a snappy block, refusing one that says it inflates past the limit."""
    size, used = _uvarint(body)
    if used == 0:
        raise BadRequest("the body is not snappy-compressed (block format): no length header")
    if size > limits.max_decoded_bytes:
        raise BadRequest(
            f"the body inflates to {size:,} bytes; the limit is {limits.max_decoded_bytes:,}"
        )
    try:
        return bytes(cramjam.snappy.decompress_raw(body))
    except cramjam.DecompressionError as error:
        raise BadRequest(f"the body is not valid snappy (block format): {error}") from None


def _uvarint(data: bytes) -> tuple[int, int]:
    """The unsigned varint at the start of `data` and its length in bytes (0: none)."""
    value = shift = 0
    for i, byte in enumerate(data[:10]):
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i + 1
        shift += 7
    return 0, 0


def decode(body: bytes, cache: SeriesCache, limits: Limits, now: datetime | None = None) -> Decoded:
    """The rows of a compressed remote_write body; raises BadRequest naming what is wrong."""
    raw = decompress(body, limits)
    try:
        request = RawWriteRequest.FromString(raw)
    except DecodeError as error:
        raise BadRequest(f"the body is not a Remote-Write 1.0 WriteRequest: {error}") from None
    series = request.timeseries
    if len(series) > limits.max_series:
        raise BadRequest(
            f"{len(series):,} series in one request; the limit is {limits.max_series:,}"
        )
    now = now or datetime.now(UTC)
    rows = _Rows(cache, limits, _ms(now - limits.max_age), _ms(now + limits.max_ahead))
    for index, one in enumerate(series):
        rows.add(index, one)
    return rows.finish()


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class _Rows:
    """Collects the rows of one request, series by series (a Python loop over samples: a
    request from Prometheus holds one sample per series entry, so there is little to batch)."""

    def __init__(self, cache: SeriesCache, limits: Limits, low: int, high: int) -> None:
        self.cache, self.limits, self.low, self.high = cache, limits, low, high
        self.received = self.histograms = 0
        self.local: dict[tuple[bytes, ...], int] = {}  # key -> sid
        self.series: list[Series] = []
        self.samples: tuple[list[int], list[int], list[float]] = ([], [], [])
        self.stale: tuple[list[int], list[int]] = ([], [])

    def add(self, index: int, one: Any) -> None:
        key = tuple(one.labels)
        sid = self.local.get(key)
        if sid is None:
            found = self.cache.known.get(key)
            if found is None:
                found = self._resolve(index, key)
            sid = self.local[key] = len(self.series)
            self.series.append(found)
        self.histograms += len(one.histograms)
        samples = one.samples
        self.received += len(samples)
        if self.received > self.limits.max_samples:
            raise BadRequest(f"more than {self.limits.max_samples:,} samples in one request")
        sids, stamps, values = self.samples
        for sample in samples:
            ts, value = sample.timestamp, sample.value
            if ts < self.low or ts > self.high:
                raise BadRequest(
                    f"series {index} ({self.series[sid].metric}) has a sample at {ts} ms, "
                    f"outside the accepted window of {self.limits.max_age} before and "
                    f"{self.limits.max_ahead} after the server's clock"
                )
            if value != value and struct.pack("<d", value) == _STALE:
                self.stale[0].append(sid)
                self.stale[1].append(ts)
            else:
                sids.append(sid)
                stamps.append(ts)
                values.append(value)

    def _resolve(self, index: int, key: tuple[bytes, ...]) -> Series:
        try:
            pairs = tuple((label.name, label.value) for label in map(Label.FromString, key))
        except DecodeError as error:
            raise BadRequest(f"series {index}: a label is not a Label message: {error}") from None
        found = series_of(self._labels(index, pairs), self.cache.models)
        with self.cache.lock:
            if len(self.cache.known) >= self.cache.size:
                self.cache.known.clear()
            self.cache.known[key] = found
        return found

    def _labels(self, index: int, pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
        given = dict(pairs)
        limits = self.limits
        if len(given) != len(pairs):
            names = [name for name, _ in pairs]
            twice = next(n for n in names if names.count(n) > 1)
            raise BadRequest(f"series {index} has the label {twice!r} twice")
        if len(pairs) > limits.max_labels:
            raise BadRequest(
                f"series {index} has {len(pairs)} labels; the limit is {limits.max_labels}"
            )
        metric = given.get("__name__")
        if not metric:
            raise BadRequest(f"series {index} has no __name__ label")
        if not _METRIC_NAME.fullmatch(metric):
            raise BadRequest(f"series {index}: {metric[:100]!r} is not a valid metric name")
        for name, value in pairs:
            if len(name) > limits.max_label_bytes or len(value) > limits.max_label_bytes:
                raise BadRequest(
                    f"series {index} ({metric}): label {name[:100]!r} is over "
                    f"{limits.max_label_bytes:,} characters"
                )
            if not _NAME.fullmatch(name):
                raise BadRequest(f"series {index} ({metric}): {name[:100]!r} is not a label name")
        return given

    def finish(self) -> Decoded:
        return assemble(self.series, self.samples, self.stale, self.received, self.histograms)


def series_of(labels: dict[str, str], models: ModelNames) -> Series:
    """What a series with `labels` (`__name__` included, checked already) is stored as."""
    given = dict(labels)
    metric = given.pop("__name__")
    gpu = mapping.gpu_columns(given, models) if mapping.is_dcgm(metric) else None
    return Series(metric, gpu, mapping.labels_json(given))


def assemble(
    series: list[Series],
    samples: tuple[list[int], list[int], list[float]],
    stale: tuple[list[int], list[int]],
    received: int,
    histograms: int = 0,
) -> Decoded:
    """Rows from `series` (sid = index) and samples/markers as (sids, ts ms, values) lists."""
    gpu = [s.gpu or (None, None, None, None, None) for s in series]
    host, index, uuid, model, labels = (
        (list(c) for c in zip(*gpu, strict=True)) if gpu else ([], [], [], [], [])
    )
    table = pa.table(
        {
            "sid": pa.array(range(len(series)), pa.int64()),
            "metric": pa.array([s.metric for s in series], pa.string()),
            "host": pa.array(host, pa.string()),
            "gpu": pa.array(index, pa.int32()),
            "uuid": pa.array(uuid, pa.string()),
            "model": pa.array(model, pa.string()),
            "labels": pa.array(labels, pa.string()),
            "dcgm": pa.array([s.gpu is not None for s in series], pa.bool_()),
            "all_labels": pa.array([s.all_labels for s in series], pa.string()),
        }
    )
    sids, stamps, values = samples
    rows = pa.table(
        {
            "sid": pa.array(sids, pa.int64()),
            "ts": _timestamps(stamps),
            "value": pa.array(values, pa.float64()),
        }
    )
    markers = pa.table({"sid": pa.array(stale[0], pa.int64()), "ts": _timestamps(stale[1])})
    return Decoded(table, rows, markers, received, histograms)


def _timestamps(ms: list[int]) -> pa.Array:
    return pa.array(np.array(ms, np.int64) * 1000, pa.int64()).cast(_TS)


def merge(parts: list[Decoded]) -> Decoded:
    """Several requests' rows as one (one transaction stores them all): series ids offset."""
    series, samples, stale, offset = [], [], [], 0
    for part in parts:
        shift = pa.scalar(offset, pa.int64())
        series.append(part.series.set_column(0, "sid", pc.add(part.series["sid"], shift)))
        samples.append(part.samples.set_column(0, "sid", pc.add(part.samples["sid"], shift)))
        stale.append(part.stale.set_column(0, "sid", pc.add(part.stale["sid"], shift)))
        offset += part.series.num_rows
    return Decoded(
        pa.concat_tables(series),
        pa.concat_tables(samples),
        pa.concat_tables(stale),
        sum(p.received for p in parts),
        sum(p.histograms for p in parts),
        requests=sum(p.requests for p in parts),
    )
