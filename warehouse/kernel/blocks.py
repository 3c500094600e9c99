"""Compressed blocks of telemetry: the codec of the cold tier, and the SQL functions that read it.

A block holds samples of one metric: whole runs of series, ordered by series then time. Its
columns are compressed apart by pcodec (a codec for numeric sequences: it finds the deltas of
timestamps and counters, and the few bits that change between floats) — series ids and run
lengths once per series, then timestamps (µs), values and batch ids once per sample. Floats go
through as their bits: NaN payloads (Prometheus's staleness marker), ±Inf and -0.0 come back
bit for bit. NULL values and batch ids are kept as the positions that are NULL.

The layout of a block, all integers little-endian:

    b"WKB1"  u32 rows  u32 runs  u32 columns  then per column: u8 type ('q' int64; 'r' int64
    as series runs that repeat, see below; a float as 'd' its bits, 'k' integers × 10^-k, 'K'
    those integers' differences along each series run, 'o' each run's median and the integers
    less it),
    u8 whether it has NULLs, u8 k; then sections, each a u32 length and its bytes: series ids
    (int32), run lengths (uint32), each column, then the NULL positions (uint32) of each column
    that has NULLs.

'r' and 'o' columns are described in `warehouse/kernel/block_columns.py`.

Two kinds of block share it (`Shape`): samples (ts µs, value, batch id), and the rows of a
downsampling tier (bucket µs, samples, value sum, min, max and last, last time).

`register(con)` binds `wanka_block(data, ts_lo, ts_hi, batch_lo, batch_hi, series)` on a
connection: the samples of a block, as a list of (series_id, ts, value, batch_id), keeping only
those in the given time range, batch range and series (a NULL bound keeps everything); and
`wanka_tier_block(data, lo, hi, series)`, a tier block's rows with their bucket in [lo, hi]. The
schema's `gpu_metrics` views read cold rows through them, so a connection that has not bound
them — a bare DuckDB CLI on the file — cannot read those views
(sql/schema/0021_telemetry_blocks.sql).
"""

from __future__ import annotations

import contextlib
import inspect
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import duckdb
import numpy as np
import pyarrow as pa
from duckdb.func import FunctionNullHandling, PythonUDFType

from warehouse.kernel.block_columns import (
    LEN,
    Runs,
    pack,
    pack_float,
    pack_int,
    unpack,
    unpack_float,
    unpack_int,
    unpack_runs,
)

MAGIC = b"WKB1"
_HEAD = struct.Struct("<4sIII")
_COLUMN = struct.Struct("<cBB")
_TS = pa.timestamp("us", tz="UTC")
_EMPTY = np.zeros(0, dtype=np.int64)

#: A column of a block: its values and where they are NULL (None: nowhere).
Column = tuple[np.ndarray, np.ndarray | None]


@dataclass(frozen=True)
class Shape:
    """A kind of block: its SQL function, its columns (name, Arrow type, SQL type) after the
    series id, and which column a time range, and a batch range, bound."""

    function: str
    columns: tuple[tuple[str, pa.DataType, str], ...]
    time: str
    batch: str | None = None

    @property
    def item(self) -> str:
        fields = ", ".join(f"{n} {t}" for n, _, t in self.columns)
        return f"STRUCT(series_id INTEGER, {fields})[]"

    @property
    def params(self) -> list[str]:
        batch = ["BIGINT", "BIGINT"] if self.batch else []
        return ["BLOB", "TIMESTAMPTZ", "TIMESTAMPTZ", *batch, "INTEGER[]"]


SAMPLES = Shape(
    "wanka_block",
    (
        ("ts", _TS, "TIMESTAMPTZ"),
        ("value", pa.float64(), "DOUBLE"),
        ("batch_id", pa.int64(), "BIGINT"),
    ),
    time="ts",
    batch="batch_id",
)
TIERS = Shape(
    "wanka_tier_block",
    (
        ("bucket", _TS, "TIMESTAMPTZ"),
        ("samples", pa.int32(), "INTEGER"),
        ("value_sum", pa.float64(), "DOUBLE"),
        ("value_min", pa.float64(), "DOUBLE"),
        ("value_max", pa.float64(), "DOUBLE"),
        ("value_last", pa.float64(), "DOUBLE"),
        ("last_ts", _TS, "TIMESTAMPTZ"),
    ),
    time="bucket",
)
FUNCTION = SAMPLES.function


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


def encode(samples: Samples) -> bytes:
    """One block of `samples`, which must be ordered by series then time."""
    return encode_rows(
        samples.series_id,
        [
            (samples.ts.astype(np.int64, copy=False), None),
            (samples.value.astype(np.float64, copy=False), samples.value_null),
            (samples.batch_id.astype(np.int64, copy=False), samples.batch_null),
        ],
    )


def decode(data: bytes) -> Samples:
    """The samples of a block, in its order."""
    ids, ((ts, _), (value, value_null), (batch, batch_null)) = decode_rows(data)
    return Samples(ids, ts, value, batch, value_null, batch_null)


def encode_rows(series_id: np.ndarray, columns: Sequence[Column]) -> bytes:
    """One block of rows ordered by series: their series ids and their columns (int64 or
    float64; a float goes in by its bits, or as decimal integers where that is smaller and
    exact)."""
    ids = series_id.astype(np.int32, copy=False)
    starts = np.flatnonzero(np.diff(ids, prepend=np.int64(ids[0]) - 1)) if len(ids) else ids
    runs = np.diff(np.append(starts, len(ids))).astype(np.uint32)
    kinds, sections, nulls = [], [pack(ids[starts]), pack(runs)], []
    for values, mask in columns:
        has = mask is not None and bool(mask.any())
        if values.dtype.kind == "f":
            code, packed, k = pack_float(values, starts)
        else:
            code, packed, k = pack_int(values.astype(np.int64, copy=False), starts, runs)
        kinds.append(_COLUMN.pack(code, has, k))
        sections.append(packed)
        if mask is not None and has:
            nulls.append(pack(np.flatnonzero(mask).astype(np.uint32)))
    head = _HEAD.pack(MAGIC, len(ids), len(runs), len(columns)) + b"".join(kinds)
    return head + b"".join(LEN.pack(len(s)) + s for s in [*sections, *nulls])


def decode_rows(data: bytes, only: Sequence[int] | None = None) -> tuple[np.ndarray, list[Column]]:
    """The series ids and columns of a block, in its order; with `only`, the columns at those
    positions alone (the others come back empty)."""
    view = memoryview(data)
    magic, count, _runs, width = _HEAD.unpack_from(view)
    if magic != MAGIC:
        raise ValueError(f"not a wanka block (starts {bytes(view[:4])!r})")
    at = _HEAD.size
    kinds = []
    for _ in range(width):
        kinds.append(_COLUMN.unpack_from(view, at))
        at += _COLUMN.size
    sections = []
    while at < len(view):
        (size,) = LEN.unpack_from(view, at)
        sections.append(view[at + LEN.size : at + LEN.size + size])
        at += LEN.size + size
    ids, runs = unpack(sections[0], np.int32), unpack(sections[1], np.uint32)
    nulls = iter(sections[2 + width :])
    columns: list[Column] = []
    for at, ((code, has, k), section) in enumerate(
        zip(kinds, sections[2 : 2 + width], strict=True)
    ):
        nulls_at = next(nulls) if has else None
        if only is not None and at not in only:
            columns.append((_EMPTY, None))
            continue
        values = (
            unpack_int(code, section, runs)
            if code in (b"q", b"r")
            else unpack_float(code, section, k, runs)
        )
        mask = None if nulls_at is None else _mask(count, unpack(nulls_at, np.uint32))
        columns.append((values, mask))
    return np.repeat(ids, runs), columns


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


def read(
    shape: Shape, data: bytes, bounds: Sequence[object], only: Sequence[int] | None = None
) -> tuple[np.ndarray, list[Column], np.ndarray | None]:
    """A block's rows and which of them to keep (None: all), by `bounds`: the time range, the
    batch range if the shape has one, and the series wanted (None: open). With `only`, the
    columns at those positions are decoded (and those the bounds need); the others are empty."""
    names = [name for name, _, _ in shape.columns]
    time_at = names.index(shape.time)
    batch_at = None if shape.batch is None else names.index(shape.batch)
    bounded = batch_at is not None and (bounds[2] is not None or bounds[3] is not None)
    needed = None
    if only is not None:
        needed = sorted({*only, time_at, *([batch_at] if batch_at is not None and bounded else [])})
    ids, columns = decode_rows(data, needed)
    keep = _between(columns[time_at][0], bounds[0], bounds[1])
    if batch_at is not None and bounded:
        batch, batch_null = columns[batch_at]
        in_batches = _between(batch, bounds[2], bounds[3])
        if in_batches is not None and batch_null is not None:
            in_batches &= ~batch_null
        if in_batches is not None:
            keep = in_batches if keep is None else keep & in_batches
    series = bounds[-1]
    if series is not None:
        wanted = np.isin(ids, cast(Any, series))
        keep = wanted if keep is None else keep & wanted
    if keep is not None and keep.all():
        keep = None  # the common case, a block within the bounds: no copy of every column
    return ids, columns, keep


def _function(shape: Shape) -> Any:
    """The Arrow body of a shape's SQL function: one list of rows per block."""

    def rows(data: pa.Array, *bounds: pa.Array) -> pa.Array:
        given = [
            b.cast(pa.int64()).to_pylist() if pa.types.is_timestamp(b.type) else b.to_pylist()
            for b in bounds
        ]
        offsets = [0]
        ids: list[np.ndarray] = []
        parts: list[list[Column]] = []
        for blob, *found in zip(data.to_pylist(), *given, strict=True):
            if blob is not None:
                block_ids, columns, keep = read(shape, blob, found)
                if keep is not None:
                    block_ids = block_ids[keep]
                    columns = [(v[keep], None if m is None else m[keep]) for v, m in columns]
                ids.append(block_ids)
                parts.append(columns)
            offsets.append(offsets[-1] + (len(ids[-1]) if blob is not None else 0))
        children = [pa.array(_cat(ids), type=pa.int32())]
        for at, (_, kind, _) in enumerate(shape.columns):
            values = _cat(p[at][0] for p in parts)
            masks = [p[at][1] for p in parts]
            mask = None
            if any(m is not None for m in masks):
                mask = np.concatenate(
                    [
                        m if m is not None else np.zeros(len(p[at][0]), bool)
                        for m, p in zip(masks, parts, strict=True)
                    ]
                )
            children.append(pa.array(values, type=kind, mask=mask))
        fields = [pa.field("series_id", pa.int32())] + [pa.field(n, k) for n, k, _ in shape.columns]
        items = pa.StructArray.from_arrays(children, fields=fields)
        return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), items)

    # DuckDB counts a UDF's parameters from its signature
    names = ["data", "lo", "hi", *(["batch_lo", "batch_hi"] if shape.batch else []), "series"]
    rows.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names]
    )
    return rows


def _cat(arrays: object) -> np.ndarray:
    found = list(arrays)  # type: ignore[call-overload]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


#: The functions' bodies, made once: DuckDB does not keep a body alive after the connection it
#: was bound on is gone, while that connection's cursors may still call it.
_BODIES = {shape.function: _function(shape) for shape in (SAMPLES, TIERS)}


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Bind `wanka_block` and `wanka_tier_block` on `con` (and so on its cursors)."""
    for shape in (SAMPLES, TIERS):
        with contextlib.suppress(duckdb.InvalidInputException):
            con.remove_function(shape.function)
        con.create_function(
            shape.function,
            _BODIES[shape.function],
            cast(Any, shape.params),
            cast(Any, shape.item),
            type=PythonUDFType.ARROW,
            null_handling=FunctionNullHandling.SPECIAL,
        )


def decode_samples(data: bytes) -> tuple[np.ndarray, np.ndarray, Runs, np.ndarray]:
    """A samples block's series ids and run lengths (one per series run), timestamps (µs, by
    series run: the series of one scrape share theirs) and values, without its batch ids: what
    an evaluator over arrays reads. A ValueError when a value is NULL (such a block is read
    through SQL)."""
    kinds, sections = _samples_sections(data, 4)  # ids, runs, ts, value
    runs = unpack(sections[1], np.uint32)
    code, has_nulls, k = kinds[1]
    if has_nulls:
        raise ValueError("the block has NULL values")
    values = unpack_float(code, sections[3], k, runs)
    ts = unpack_runs(kinds[0][0], sections[2], runs)
    return unpack(sections[0], np.int32), runs, ts, values


def run_series(data: bytes) -> np.ndarray:
    """The series id of each run of a samples block: its first section alone decoded (what a
    reader that sizes its arrays by the series present needs, before it decodes them)."""
    return unpack(_samples_sections(data, 1)[1][0], np.int32)


def _samples_sections(data: bytes, count: int) -> tuple[list[Any], list[memoryview]]:
    """A samples block's column kinds and its first `count` sections."""
    view = memoryview(data)
    magic, _count, _runs, width = _HEAD.unpack_from(view)
    if magic != MAGIC or width != len(SAMPLES.columns):
        raise ValueError(f"not a wanka samples block (starts {bytes(view[:4])!r})")
    at = _HEAD.size
    kinds = [_COLUMN.unpack_from(view, at + i * _COLUMN.size) for i in range(width)]
    at += width * _COLUMN.size
    sections = []
    for _ in range(count):
        (size,) = LEN.unpack_from(view, at)
        sections.append(view[at + LEN.size : at + LEN.size + size])
        at += LEN.size + size
    return kinds, sections
