"""DataRows for a small batch, value by value in Python.

Each Arrow compute call costs ~20 µs whatever the length: right for a batch of 65,536 rows,
wrong for the one-row answers of dashboards and health checks, where `rows._block`'s dozen
kernel calls cost ~0.4 ms for `SELECT 1`. Batches of at most `SMALL_ROWS` rows are framed here;
the common types are formatted in Python (as PostgreSQL prints them, like `textenc`), the others
by the same Arrow encoders. `tests/service/pgwire/test_small.py` checks that both give the
same bytes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from service.pgwire.textenc import float_text

SMALL_ROWS = 64
_NULL = struct.pack("!i", -1)
_HEADER = struct.Struct("!cih")
_LENGTH = struct.Struct("!i")

Encoder = Callable[[pa.Array, int], pa.Array]


def data_rows(
    batch: pa.RecordBatch, oids: Sequence[int], formats: Sequence[int], coders: list[Encoder]
) -> pa.Buffer:
    """The DataRow messages of `batch` (at most SMALL_ROWS rows) as one buffer."""
    columns = [
        (_text_values(column) if fmt == 0 else None) or coder(column, oid).to_pylist()
        for column, oid, fmt, coder in zip(batch.columns, oids, formats, coders, strict=True)
    ]
    out = bytearray()
    count = len(columns)
    for row in zip(*columns, strict=True):
        size = 6 + sum(4 + (len(v) if v is not None else 0) for v in row)
        out += _HEADER.pack(b"D", size, count)
        for value in row:
            out += _NULL if value is None else _LENGTH.pack(len(value)) + value
    return pa.py_buffer(bytes(out))


def _text_values(column: pa.Array) -> list[bytes | None] | None:
    """Text-format values of the common types, or None to leave the column to `textenc`."""
    render = _renderer(column.type)
    if render is None:
        return None
    try:
        values = column.to_pylist()
    except (ValueError, OverflowError):  # dates outside Python's years 1-9999
        return None
    return [None if v is None else render(v).encode() for v in values]


def _renderer(kind: pa.DataType) -> Callable[[Any], str] | None:
    if pa.types.is_boolean(kind):
        return lambda v: "t" if v else "f"
    if pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return str
    if kind == pa.float64():
        return float_text
    if kind == pa.float32():
        return lambda v: float_text(v, 6)
    if pa.types.is_decimal(kind):
        return lambda v: format(v, "f") if isinstance(v, decimal.Decimal) else str(v)
    if pa.types.is_date32(kind):
        return dt.date.isoformat
    if pa.types.is_timestamp(kind) and kind.unit in ("s", "ms", "us"):
        return _timestamp_text if kind.tz is None else _timestamptz_text
    return None


def _timestamp_text(value: dt.datetime) -> str:
    """'2024-03-01 12:00:00.5': ISO with a space, the fraction without trailing zeros.

    >>> _timestamp_text(dt.datetime(2024, 3, 1, 12, 0, 0, 500000))
    '2024-03-01 12:00:00.5'
    """
    text = value.replace(tzinfo=None).isoformat(sep=" ")
    return text.rstrip("0") if "." in text else text


def _timestamptz_text(value: dt.datetime) -> str:
    """As `_timestamp_text` in UTC (the session time zone), with PostgreSQL's '+00'."""
    return _timestamp_text(value.astimezone(dt.UTC)) + "+00"
