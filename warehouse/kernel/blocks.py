"""Compressed blocks of telemetry: the codec of the cold tier, and the SQL function that reads it.

A block holds samples of one metric: whole runs of series, ordered by series then time. Its
columns are compressed apart by pcodec (a codec for numeric sequences: it finds the deltas of
timestamps and counters, and the few bits that change between floats) — series ids and run
lengths once per series, then timestamps (µs), values and batch ids once per sample. Floats go
through as their bits: NaN payloads (Prometheus's staleness marker), ±Inf and -0.0 come back
bit for bit. NULL values and batch ids are kept as the positions that are NULL.

The layout of a block, all integers little-endian:

    b"WKB1"  u32 samples  u32 runs  u32 flags
    then sections, each a u32 length and its bytes: series ids (int32), run lengths (uint32),
    timestamps (int64 µs), values (float64), batch ids (int64), then the NULL positions of
    values and of batch ids (uint32) when the flags say there are any.

`register(con)` binds `wanka_block(data, ts_lo, ts_hi, batch_lo, batch_hi, series)` on a
connection: the samples of a block, as a list of (series_id, ts, value, batch_id), keeping only
those in the given time range, batch range and series (a NULL bound keeps everything). The
schema's `gpu_metrics` view reads cold samples through it, so a connection that has not bound it
— a bare DuckDB CLI on the file — cannot read `gpu_metrics` (sql/schema/0021_telemetry_blocks.sql).
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass
from typing import Any, cast

import duckdb
import numpy as np
import pyarrow as pa
from duckdb.func import FunctionNullHandling, PythonUDFType
from pcodec import ChunkConfig, standalone

MAGIC = b"WKB1"
_HEAD = struct.Struct("<4sIII")
_LEN = struct.Struct("<I")
_VALUE_NULLS = 1
_BATCH_NULLS = 2
#: pcodec's default effort; level 8 measured 0.5 % smaller and 2× slower to encode.
_CONFIG = ChunkConfig(compression_level=8)
#: The element type of a decoded block, as the SQL function returns it.
SAMPLE_TYPE = pa.struct(
    [
        ("series_id", pa.int32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("value", pa.float64()),
        ("batch_id", pa.int64()),
    ]
)
FUNCTION = "wanka_block"


@dataclass(frozen=True)
class Samples:
    """Samples as columns: series ids, timestamps (µs since the epoch), values and batch ids.
    `value_null` and `batch_null` mark NULLs (None: none)."""

    series_id: np.ndarray
    ts: np.ndarray
    value: np.ndarray
    batch_id: np.ndarray
    value_null: np.ndarray | None = None
    batch_null: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ts)


def _pack(array: np.ndarray) -> bytes:
    if not len(array):
        return b""
    return bytes(standalone.simple_compress(np.ascontiguousarray(array), _CONFIG))


def _unpack(data: memoryview, dtype: type) -> np.ndarray:
    if not len(data):
        return np.zeros(0, dtype=dtype)
    return np.asarray(standalone.simple_decompress(bytes(data)), dtype=dtype)


def encode(samples: Samples) -> bytes:
    """One block of `samples`, which must be ordered by series then time."""
    ids = samples.series_id.astype(np.int32, copy=False)
    starts = np.flatnonzero(np.diff(ids, prepend=np.int64(ids[0]) - 1)) if len(ids) else ids
    runs = np.diff(np.append(starts, len(ids))).astype(np.uint32)
    flags = 0
    sections = [
        _pack(ids[starts]),
        _pack(runs),
        _pack(samples.ts.astype(np.int64, copy=False)),
        _pack(samples.value.astype(np.float64, copy=False)),
        _pack(samples.batch_id.astype(np.int64, copy=False)),
    ]
    for flag, mask in ((_VALUE_NULLS, samples.value_null), (_BATCH_NULLS, samples.batch_null)):
        if mask is not None and mask.any():
            flags |= flag
            sections.append(_pack(np.flatnonzero(mask).astype(np.uint32)))
    head = _HEAD.pack(MAGIC, len(ids), len(runs), flags)
    return head + b"".join(_LEN.pack(len(s)) + s for s in sections)


def decode(data: bytes) -> Samples:
    """The samples of a block, in its order."""
    view = memoryview(data)
    magic, count, _runs, flags = _HEAD.unpack_from(view)
    if magic != MAGIC:
        raise ValueError(f"not a wanka block (starts {bytes(view[:4])!r})")
    at = _HEAD.size
    sections = []
    while at < len(view):
        (size,) = _LEN.unpack_from(view, at)
        sections.append(view[at + _LEN.size : at + _LEN.size + size])
        at += _LEN.size + size
    ids, runs = _unpack(sections[0], np.int32), _unpack(sections[1], np.uint32)
    nulls = iter(sections[5:])
    value_null = batch_null = None
    if flags & _VALUE_NULLS:
        value_null = _mask(count, _unpack(next(nulls), np.uint32))
    if flags & _BATCH_NULLS:
        batch_null = _mask(count, _unpack(next(nulls), np.uint32))
    return Samples(
        series_id=np.repeat(ids, runs),
        ts=_unpack(sections[2], np.int64),
        value=_unpack(sections[3], np.float64),
        batch_id=_unpack(sections[4], np.int64),
        value_null=value_null,
        batch_null=batch_null,
    )


def _mask(count: int, positions: np.ndarray) -> np.ndarray:
    mask = np.zeros(count, dtype=bool)
    mask[positions] = True
    return mask


def _between(column: np.ndarray, lo: object, hi: object) -> np.ndarray | None:
    keep = None
    if lo is not None:
        keep = column >= lo
    if hi is not None:
        keep = column <= hi if keep is None else keep & (column <= hi)
    return keep


def _us(value: object) -> int | None:
    """A bound as µs since the epoch (the UDF gets TIMESTAMPTZ bounds as Arrow µs)."""
    return None if value is None else int(value)  # type: ignore[call-overload]


def _read(
    data: bytes, ts: tuple[object, object], batch: tuple[object, object], series: object
) -> tuple[Samples, np.ndarray | None]:
    """A block's samples and which of them to keep (None: all)."""
    block = decode(data)
    keep = _between(block.ts, _us(ts[0]), _us(ts[1]))
    in_batches = _between(block.batch_id, batch[0], batch[1])
    if in_batches is not None and block.batch_null is not None:
        in_batches &= ~block.batch_null
    for more in (
        in_batches,
        None if series is None else np.isin(block.series_id, cast(Any, series)),
    ):
        if more is not None:
            keep = more if keep is None else keep & more
    return block, keep


def _column(values: np.ndarray, null: np.ndarray | None, kind: pa.DataType) -> pa.Array:
    return pa.array(values, type=kind, mask=null)


def _blocks(
    data: pa.Array,
    ts_lo: pa.Array,
    ts_hi: pa.Array,
    batch_lo: pa.Array,
    batch_hi: pa.Array,
    series: pa.Array,
) -> pa.Array:
    """The Arrow body of `wanka_block`: one list of samples per block."""
    offsets = [0]
    parts: list[Samples] = []
    bounds = zip(
        data.to_pylist(),
        ts_lo.cast(pa.int64()).to_pylist(),
        ts_hi.cast(pa.int64()).to_pylist(),
        batch_lo.to_pylist(),
        batch_hi.to_pylist(),
        series.to_pylist(),
        strict=True,
    )
    for blob, t0, t1, b0, b1, wanted in bounds:
        if blob is None:
            offsets.append(offsets[-1])
            continue
        block, keep = _read(blob, (t0, t1), (b0, b1), wanted)
        if keep is not None:
            block = _take(block, keep)
        parts.append(block)
        offsets.append(offsets[-1] + len(block))
    children = [
        _column(_cat(p.series_id for p in parts), None, pa.int32()),
        _column(_cat(p.ts for p in parts), None, pa.timestamp("us", tz="UTC")),
        _column(_cat(p.value for p in parts), _nulls(parts, "value_null"), pa.float64()),
        _column(_cat(p.batch_id for p in parts), _nulls(parts, "batch_null"), pa.int64()),
    ]
    items = pa.StructArray.from_arrays(children, fields=list(SAMPLE_TYPE))
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), items)


def _take(block: Samples, keep: np.ndarray) -> Samples:
    def cut(mask: np.ndarray | None) -> np.ndarray | None:
        return None if mask is None else mask[keep]

    return Samples(
        block.series_id[keep],
        block.ts[keep],
        block.value[keep],
        block.batch_id[keep],
        cut(block.value_null),
        cut(block.batch_null),
    )


def _cat(arrays: object) -> np.ndarray:
    found = list(arrays)  # type: ignore[call-overload]
    return np.concatenate(found) if found else np.zeros(0)


def _nulls(parts: list[Samples], name: str) -> np.ndarray | None:
    if all(getattr(p, name) is None for p in parts):
        return None
    return np.concatenate(
        [
            getattr(p, name) if getattr(p, name) is not None else np.zeros(len(p), dtype=bool)
            for p in parts
        ]
    )


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Bind `wanka_block` on `con` (and so on its cursors)."""
    with contextlib.suppress(duckdb.InvalidInputException):
        con.remove_function(FUNCTION)
    con.create_function(
        FUNCTION,
        _blocks,
        cast(Any, ["BLOB", "TIMESTAMPTZ", "TIMESTAMPTZ", "BIGINT", "BIGINT", "INTEGER[]"]),
        cast(Any, "STRUCT(series_id INTEGER, ts TIMESTAMPTZ, value DOUBLE, batch_id BIGINT)[]"),
        type=PythonUDFType.ARROW,
        null_handling=FunctionNullHandling.SPECIAL,
    )
