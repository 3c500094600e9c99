"""`wanka ingest dcgm`: dcgm-exporter's Prometheus text into `gpu_metrics`.

    DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-…",Hostname="node1",modelName="NVIDIA H100 80GB HBM3",
    pod="train-0",namespace="ml",container="main"} 87 1793491200000

(one line). Each sample is one row: the metric name as given (DCGM_FI_* or any other
exporter's), the value as a DOUBLE (NaN and ±Inf kept). Labels become columns where there is
one:

| label       | column | notes                                                           |
|-------------|--------|-----------------------------------------------------------------|
| `Hostname`  | host   | else `--host`; a sample with neither is rejected                |
| `gpu`       | gpu    | when an integer; otherwise kept in `labels`                     |
| `UUID`      | uuid   |                                                                 |
| `modelName` | model  | short name (`models.ModelNames`); the raw name stays in labels  |
| any other   | labels | MIG (`GPU_I_PROFILE`, `GPU_I_ID`), pod/namespace/container, ... |

The scrape time is `--at` when given, else the line's timestamp (ms), else the file's
modification time. Parsing is vectorised (`promblock`), and label sets are resolved once per
distinct label text: the columns that come from labels are Arrow dictionaries over the file's
label sets, which DuckDB stores without expanding them in Python.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import IO

import numpy as np
import pyarrow as pa

from warehouse.ingest import textblocks
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Source, register
from warehouse.ingest.models import ModelNames
from warehouse.ingest.promblock import BlockParser, Samples
from warehouse.ingest.promline import Labels

#: Bytes of text parsed at once: large enough that per-block costs vanish, small enough that a
#: block's arrays stay a few hundred MB at most.
BLOCK_BYTES = 8 << 20
TABLE = "gpu_metrics"
NO_HOST = "no Hostname label and no --host given: cannot tell which host the sample is from"
_INT32 = re.compile(r"[+-]?[0-9]{1,10}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@register("dcgm", "DCGM exporter Prometheus text")
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Yield `gpu_metrics` rows block by block; see the module docstring."""
    schema = context.schema(TABLE)
    sets = LabelSets(ModelNames(context.model_names), options.host, schema.field("labels").type)
    fallback = options.at or source.mtime
    parser = BlockParser(sets.add, require_timestamp=fallback is None)
    for block in textblocks.blocks(stream, BLOCK_BYTES):
        samples = parser.parse(block)
        rows = sets.rows(samples, parser.names, schema, options.at, fallback)
        yield Parsed(TABLE, rows, samples.rejects)


def labels_json(pairs: list[tuple[str, str]]) -> str | None:
    """Labels that are not columns, as the JSON object `gpu_metrics.labels` holds.

    >>> labels_json([("pod", "trainer-0"), ("GPU_I_PROFILE", "1g.10gb")])
    '{"pod":"trainer-0","GPU_I_PROFILE":"1g.10gb"}'
    >>> labels_json([]) is None
    True
    """
    if not pairs:
        return None
    return json.dumps(dict(pairs), ensure_ascii=False, separators=(",", ":"))


class LabelSets:
    """The distinct label sets of one file, each resolved once into column values."""

    def __init__(self, models: ModelNames, default_host: str | None, labels_type: pa.DataType):
        self._models = models
        self._default_host = default_host or None
        self._labels_type = labels_type
        self._strings: dict[str, dict[str, int]] = {"host": {}, "uuid": {}, "model": {}}
        # Per label set id: index of its host, uuid, model (-1: none), gpu, extra labels.
        self._refs: dict[str, list[int]] = {"host": [], "uuid": [], "model": []}
        self._gpu: list[int | None] = []
        self._extra: list[list[tuple[str, str]]] = []
        self._built = 0
        self._columns = {c: (np.empty(0, np.int32), pa.array([], pa.string())) for c in self._refs}
        self._gpu_arrays = (np.empty(0, np.int32), np.empty(0, bool))
        self._labels = (np.empty(0, bool), pa.array([], labels_type))

    def add(self, labels: Labels) -> int | str:
        """The id of a new label set, or why samples carrying it are rejected."""
        given = dict(labels)
        host = given.get("Hostname") or self._default_host
        if host is None:
            return NO_HOST
        gpu_text = given.get("gpu")
        gpu = int(gpu_text) if gpu_text and _INT32.fullmatch(gpu_text) else None
        if gpu is not None and not -(2**31) <= gpu < 2**31:
            gpu = None
        taken = {"Hostname", "UUID"} | ({"gpu"} if gpu is not None else set())
        model = given.get("modelName")
        self._ref("host", host)
        self._ref("uuid", given.get("UUID") or None)
        self._ref("model", self._models.short(model) if model else None)
        self._gpu.append(gpu)
        self._extra.append([(k, v) for k, v in labels if k not in taken])
        return len(self._gpu) - 1

    def _ref(self, column: str, value: str | None) -> None:
        index = (
            -1
            if value is None
            else self._strings[column].setdefault(value, len(self._strings[column]))
        )
        self._refs[column].append(index)

    def rows(
        self,
        samples: Samples,
        names: list[str],
        schema: pa.Schema,
        at: datetime | None,
        fallback: datetime | None,
    ) -> pa.Table:
        """The block's `gpu_metrics` rows (no batch_id), label columns as dictionaries."""
        self._build()
        sets = samples.label_sets
        gpu, gpu_null = self._gpu_arrays
        empty, maps = self._labels
        columns: dict[str, pa.Array] = {
            "ts": _timestamps(samples, schema.field("ts").type, at, fallback),
            "host": self._dictionary("host", sets),
            "gpu": pa.array(gpu[sets], schema.field("gpu").type, mask=gpu_null[sets]),
            "uuid": self._dictionary("uuid", sets),
            "model": self._dictionary("model", sets),
            "metric": pa.DictionaryArray.from_arrays(
                pa.array(samples.names, pa.int32()), pa.array(names, pa.string())
            ),
            "value": pa.array(samples.values, pa.float64()),
            "labels": pa.DictionaryArray.from_arrays(
                pa.array(sets, pa.int32(), mask=empty[sets]), maps
            ),
        }
        order = [f.name for f in schema if f.name in columns]
        return pa.table([columns[name] for name in order], names=order)

    def _dictionary(self, column: str, sets: np.ndarray) -> pa.Array:
        refs, values = self._columns[column]
        picked = refs[sets]
        return pa.DictionaryArray.from_arrays(pa.array(picked, mask=picked < 0), values)

    def _build(self) -> None:
        """(Re)build the per-label-set arrays when label sets were added since the last block."""
        count = len(self._gpu)
        if count == self._built:
            return
        for column, refs in self._refs.items():
            values = pa.array(list(self._strings[column]), pa.string())
            self._columns[column] = (np.array(refs, np.int32), values)
        self._gpu_arrays = (
            np.array([g if g is not None else 0 for g in self._gpu], np.int32),
            np.array([g is None for g in self._gpu], bool),
        )
        old_empty, old_maps = self._labels
        new = self._extra[self._built :]
        self._labels = (
            np.concatenate([old_empty, np.array([not e for e in new], bool)]),
            pa.concat_arrays([old_maps, pa.array([labels_json(e) for e in new], pa.string())]),
        )
        self._built = count


def _timestamps(
    samples: Samples, ts_type: pa.DataType, at: datetime | None, fallback: datetime | None
) -> pa.Array:
    """Scrape times: `at`, else the line's ms timestamp, else `fallback`, in `ts_type`'s unit."""
    per_s = _PER_SECOND[ts_type.unit]
    n = len(samples.values)
    if at is not None:
        ticks = np.full(n, _ticks(at, per_s), np.int64)
    else:
        ticks = (
            samples.timestamps_ms * (per_s // 1000)
            if per_s >= 1000
            else samples.timestamps_ms // 1000
        )
        if fallback is not None and not samples.stamped.all():
            ticks = np.where(samples.stamped, ticks, _ticks(fallback, per_s))
    return pa.Array.from_buffers(
        ts_type, n, [None, pa.py_buffer(np.ascontiguousarray(ticks, np.int64))]
    )


def _ticks(moment: datetime, per_s: int) -> int:
    """`moment` in units of 1/per_s seconds since 1970 (naive = UTC).

    >>> _ticks(datetime(1970, 1, 1, 0, 0, 1, 500), 1_000_000)
    1000500
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1) * per_s // 1_000_000
