"""Binary-format values (PostgreSQL's send functions), a whole Arrow column at once.

Fixed-width types are one numpy byte swap; numeric goes through integer arithmetic on the
unscaled values (vectorised when they fit 64 bits); arrays build their element bytes vectorised
and frame each row in Python.
"""

from __future__ import annotations

import decimal
import struct
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from service.pgwire import arrays
from service.pgwire import types as t

BIN = pa.binary()
PG_EPOCH_DAYS = 10_957  # 2000-01-01 - 1970-01-01
PG_EPOCH_US = PG_EPOCH_DAYS * 86_400 * 1_000_000

_FIXED: dict[int, str] = {
    t.INT2: ">i2",
    t.INT4: ">i4",
    t.INT8: ">i8",
    t.OID: ">u4",
    t.FLOAT4: ">f4",
    t.FLOAT8: ">f8",
    t.BOOL: "u1",
}


def encode_binary(arr: pa.Array, oid: int) -> pa.Array:
    """The column as PostgreSQL binary-format bytes (a binary array; NULL stays NULL)."""
    arr = _plain(arr)
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), BIN)
    if oid in _FIXED and not pa.types.is_decimal(arr.type):
        return _fixed(arr, _FIXED[oid])
    if oid in _TEMPORAL:
        return _TEMPORAL[oid](arr)
    if oid in (t.TEXT, t.VARCHAR, t.JSON, t.BYTEA, t.NAME, t.CHAR):
        if pa.types.is_string(arr.type) or pa.types.is_binary(arr.type):
            return arr.cast(BIN)
        if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
            return arr.cast(pa.large_binary()).cast(BIN)
    if oid == t.NUMERIC:
        return _numerics(arr)
    if oid == t.INTERVAL and pa.types.is_interval(arr.type):
        return _per_value(arr, interval_send)
    if oid == t.UUID:
        return _per_value(arr, lambda v: uuid.UUID(str(v)).bytes if not isinstance(v, bytes) else v)
    if oid in t.ELEMENT_OF:
        return _arrays(arr, t.ELEMENT_OF[oid])
    from service.pgwire.textenc import encode_text  # text is the binary form of json/unknown

    return encode_text(arr, oid)


def _plain(arr: pa.Array) -> pa.Array:
    """The values under an extension type or a dictionary."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr


def _date(arr: pa.Array) -> pa.Array:
    return _fixed(pc.subtract(arr.cast(pa.int32()), PG_EPOCH_DAYS), ">i4")


def _timestamp(arr: pa.Array) -> pa.Array:
    micros = arr.cast(pa.timestamp("us", arr.type.tz)).cast(pa.int64())
    return _fixed(pc.subtract(micros, PG_EPOCH_US), ">i8")


def _time(arr: pa.Array) -> pa.Array:
    return _fixed(arr.cast(pa.time64("us")).cast(pa.int64()), ">i8")


#: Dates and times: days or microseconds since PostgreSQL's epoch, 2000-01-01.
_TEMPORAL = {t.DATE: _date, t.TIMESTAMP: _timestamp, t.TIMESTAMPTZ: _timestamp, t.TIME: _time}


def _fixed(arr: pa.Array, dtype: str) -> pa.Array:
    width = np.dtype(dtype).itemsize
    if pa.types.is_boolean(arr.type):
        data = arr.cast(pa.uint8()).fill_null(0).to_numpy(zero_copy_only=False).astype(dtype)
    else:
        data = arrays.values(arr, arr.type.to_pandas_dtype().__name__).astype(dtype)
    fixed = pa.Array.from_buffers(pa.binary(width), len(arr), [None, pa.py_buffer(data.tobytes())])
    out = fixed.cast(BIN)
    if arr.null_count:
        out = pc.if_else(arr.is_valid(), out, pa.scalar(None, BIN))
    return out


def _per_value(arr: pa.Array, send: Any) -> pa.Array:
    return pa.array([None if v is None else send(v) for v in arr.to_pylist()], BIN)


def interval_send(value: Any) -> bytes:
    """int64 microseconds, int32 days, int32 months."""
    return struct.pack("!qii", value.nanoseconds // 1000, value.days, value.months)


_NUMERIC_HEAD = struct.Struct("!hhhh")


def numeric_send(value: decimal.Decimal) -> bytes:
    """PostgreSQL's numeric_send: base-10000 digits, weight, sign, display scale.

    >>> numeric_send(decimal.Decimal("12345.678")).hex()
    '0003000100000003000109291a7c'
    """
    if value.is_nan():
        return _NUMERIC_HEAD.pack(0, 0, 0xC000, 0)
    sign, numerals, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    digits = "".join(map(str, numerals)) + "0" * max(exponent, 0)
    digits = digits.rjust(scale + 1, "0")  # 0.0010: '10' -> '00010'
    integer, fraction = (digits[: len(digits) - scale] or "0"), digits[len(digits) - scale :]
    integer = integer.lstrip("0")
    integer = "0" * (-len(integer) % 4) + integer
    fraction = fraction + "0" * (-len(fraction) % 4)
    groups = [int(integer[i : i + 4]) for i in range(0, len(integer), 4)]
    weight = len(groups) - 1
    groups += [int(fraction[i : i + 4]) for i in range(0, len(fraction), 4)]
    while groups and groups[0] == 0:  # leading zero groups shift the weight down
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    head = _NUMERIC_HEAD.pack(len(groups), weight, 0x4000 if sign else 0, scale)
    return head + struct.pack(f"!{len(groups)}H", *groups)


def _numerics(arr: pa.Array) -> pa.Array:
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
        return _per_value(arr, lambda v: numeric_send(decimal.Decimal(str(v))))
    return _per_value(arr, numeric_send)


def _arrays(arr: pa.Array, element_oid: int) -> pa.Array:
    """One-dimensional arrays: ndim, has-null flag, element OID, length, lower bound, items."""
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        raise TypeError(f"cannot send {arr.type} as a PostgreSQL array")
    flat = arr.flatten()
    items = encode_binary(flat, element_oid).to_pylist()
    offsets = arr.offsets.to_numpy()
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    rows: list[bytes | None] = []
    for i in range(len(arr)):
        if not valid[i]:
            rows.append(None)
            continue
        chunk = items[offsets[i] - offsets[0] : offsets[i + 1] - offsets[0]]
        if not chunk:  # PostgreSQL sends an empty array with no dimensions
            rows.append(struct.pack("!iiI", 0, 0, element_oid))
            continue
        has_null = any(v is None for v in chunk)
        body = [struct.pack("!iiiii", 1, has_null, element_oid, len(chunk), 1)]
        for v in chunk:
            body.append(b"\xff\xff\xff\xff" if v is None else struct.pack("!i", len(v)) + v)
        rows.append(b"".join(body))
    return pa.array(rows, BIN)
