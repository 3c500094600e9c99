"""The rows of one remote_write request, as both decoders build them: its distinct series
(`Series`, remembered across requests by `SeriesCache`), its samples and its staleness markers,
checked against `Limits` (a `BadRequest` names what is wrong)."""

from __future__ import annotations

import re
import struct
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from warehouse.errors import UserError
from warehouse.ingest.models import ModelNames
from warehouse.remote_write import labels as mapping
from warehouse.remote_write.messages import Label

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

    series: pa.Table  # sid, metric, host, gpu, uuid, model, labels, dcgm, all_labels, series_id
    samples: pa.Table  # sid, ts, value
    stale: pa.Table  # sid, ts
    received: int = 0  # float samples received, staleness markers included
    histograms: int = 0  # native histogram samples: not stored, counted
    requests: int = 1
    keys: list[Series] | None = None  # what each sid is, for SeriesCache.ids (None: no cache)


#: What `oldest_ms` says of rows without a sample: later than any sample.
NO_SAMPLE_MS = 2**62


def oldest_ms(rows: Decoded) -> int:
    """The oldest sample or staleness marker time of `rows`, ms (NO_SAMPLE_MS if none)."""
    found = [
        int(t["ts"].cast(pa.int64()).to_numpy().min()) // 1000
        for t in (rows.samples, rows.stale)
        if t.num_rows
    ]
    return min(found, default=NO_SAMPLE_MS)


class SeriesCache:
    """Label sets seen before (as raw Label bytes) and what they map to, for the process: a
    steady stream repeats the same series every scrape. Cleared when it outgrows `size`."""

    def __init__(self, models: ModelNames, size: int = 2_000_000) -> None:
        self.models = models
        self.size = size
        self.known: dict[tuple[bytes, ...], Series] = {}
        self.known_raw: dict[bytes, Series] = {}  # by the raw bytes of its label fields
        #: Series.stored_id holds the gpu_series id of a DCGM series stored before, so a
        #: steady feed skips matching its label sets against the dictionary (`store` checks
        #: they still exist); a new generation forgets them all
        self.generation = 0
        self.lock = threading.Lock()

    def remember(self, stored: list[tuple[Series, int]]) -> None:
        """Note the series ids a committed transaction resolved."""
        generation = self.generation
        for series, series_id in stored:
            series.stored_id, series.generation = series_id, generation

    def forget_ids(self) -> None:
        with self.lock:
            self.generation += 1

    def id_of(self, series: Series) -> int | None:
        return series.stored_id if series.generation == self.generation else None


@dataclass(eq=False)
class Series:
    metric: str
    gpu: mapping.GpuColumns | None  # None: not a DCGM series with a host (prom_samples)
    all_labels: str | None  # every label but __name__, as JSON
    #: its gpu_series id once a committed transaction resolved it, valid while `generation`
    #: is the cache's (SeriesCache.remember / forget_ids)
    stored_id: int | None = None
    generation: int = -1

    def __post_init__(self) -> None:
        host, gpu, uuid, model, labels = self.gpu or (None, None, None, None, None)
        #: its row of Decoded.series (sid and series_id aside), built once
        self.columns = (
            self.metric, host, gpu, uuid, model, labels, self.gpu is not None, self.all_labels,
        )  # fmt: skip


def check_series_count(count: int, limits: Limits) -> None:
    if count > limits.max_series:
        raise BadRequest(f"{count:,} series in one request; the limit is {limits.max_series:,}")


class Rows:
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
                self.cache.known_raw.clear()
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
        generation = self.cache.generation
        rows = assemble(
            self.series,
            self.samples,
            self.stale,
            self.received,
            self.histograms,
            [s.stored_id if s.generation == generation else None for s in self.series],
        )
        rows.keys = self.series
        return rows


def series_of(labels: dict[str, str], models: ModelNames) -> Series:
    """What a series with `labels` (`__name__` included, checked already) is stored as."""
    given = dict(labels)
    metric = given.pop("__name__")
    gpu = mapping.gpu_columns(given, models) if mapping.is_dcgm(metric) else None
    return Series(metric, gpu, mapping.labels_json(given))


_SERIES = {
    "metric": pa.string(), "host": pa.string(), "gpu": pa.int32(), "uuid": pa.string(),
    "model": pa.string(), "labels": pa.string(), "dcgm": pa.bool_(), "all_labels": pa.string(),
}  # fmt: skip


def assemble(
    series: list[Series],
    samples: tuple[list[int], list[int], list[float]],
    stale: tuple[list[int], list[int]],
    received: int,
    histograms: int = 0,
    ids: list[int | None] | None = None,
) -> Decoded:
    """Rows from `series` (sid = index) and samples/markers as (sids, ts ms, values) lists;
    `ids` the gpu_series id of each series where known."""
    ids = ids if ids is not None else [None] * len(series)
    # a series stored before needs only its id; the others their label columns
    need = [i for i, known in enumerate(ids) if known is None]
    held = [i for i, known in enumerate(ids) if known is not None]
    columns = list(zip(*(series[i].columns for i in need), strict=True)) or [()] * len(_SERIES)
    fresh = pa.table(
        {
            "sid": pa.array(need, pa.int64()),
            **{
                name: pa.array(column, kind)
                for (name, kind), column in zip(_SERIES.items(), columns, strict=True)
            },
            "series_id": pa.nulls(len(need), pa.int64()),
        }
    )
    table = fresh
    if held:
        # a staleness marker is stored by metric and labels: its series keeps those two; the
        # GPU events of the batch read every series' metric and GPU (warehouse/tsdb/events.py)
        ending = set(stale[0])
        named = {
            "all_labels": pa.array(
                [series[i].all_labels if i in ending else None for i in held], pa.string()
            ),
            **{
                name: pa.array([series[i].columns[k] for i in held], _SERIES[name])
                for k, name in enumerate(("metric", "host", "gpu", "uuid"))
            },
        }
        stored = pa.table(
            {
                "sid": pa.array(held, pa.int64()),
                **{
                    name: pa.array(np.ones(len(held), bool))
                    if name == "dcgm"
                    else named.get(name, pa.nulls(len(held), kind))
                    for name, kind in _SERIES.items()
                },
                "series_id": pa.array([ids[i] for i in held], pa.int64()),
            }
        )
        table = pa.concat_tables([fresh, stored])
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
