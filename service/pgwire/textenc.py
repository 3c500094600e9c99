"""Text-format values (what PostgreSQL's output functions print), a whole Arrow column at once.

Each encoder turns an Arrow array into a binary array of the bytes a PostgreSQL client expects in
text format, NULL staying NULL. The common types (integers, floats, text, timestamps, dates,
booleans, decimals) stay in Arrow's C++ kernels; rare ones (intervals, arrays, structs, bytea)
go value by value in Python.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from service.pgwire import arrays
from service.pgwire import types as t

BIN = pa.binary()


def encode_text(arr: pa.Array, oid: int) -> pa.Array:
    """The column as PostgreSQL text-format bytes (a binary array; NULL stays NULL)."""
    arrow = arr.type
    if isinstance(arrow, pa.BaseExtensionType):
        arr = arr.storage
        arrow = arr.type
    if pa.types.is_dictionary(arrow):
        arr = arr.cast(arrow.value_type)
        arrow = arr.type
    if pa.types.is_null(arrow):
        return pa.nulls(len(arr), BIN)
    if pa.types.is_string(arrow) or pa.types.is_large_string(arrow):
        return arr.cast(BIN) if pa.types.is_string(arrow) else arr.cast(pa.string()).cast(BIN)
    if pa.types.is_boolean(arrow):
        return pc.if_else(arr, pa.scalar(b"t", BIN), pa.scalar(b"f", BIN))
    if pa.types.is_decimal(arrow):
        return _decimals(arr)
    if pa.types.is_integer(arrow) or pa.types.is_date(arrow):
        return arr.cast(pa.string()).cast(BIN)
    if pa.types.is_floating(arrow):
        return _floats(arr, 15 if arrow == pa.float64() else 6)
    if pa.types.is_timestamp(arrow):
        return _timestamps(arr)
    if pa.types.is_time(arrow):
        return _strip_fraction(arr.cast(pa.time64("us")).cast(pa.string())).cast(BIN)
    return _per_value(arr, oid)


def _floats(arr: pa.Array, digits: int) -> pa.Array:
    """Shortest round-trip digits, exponent form outside [1e-4, 1e`digits`) like float8out.

    Arrow's own shortest formatting agrees with PostgreSQL for 1e-4 <= |x| < 1e10 (1e6 for
    float4) and for zero; only the other values (rare in telemetry) are formatted in Python.
    """
    text = arr.cast(pa.string())
    magnitude = pc.abs(arr.cast(pa.float64()))
    upper = 1e10 if digits == 15 else 1e6
    usual = pc.or_(
        pc.and_(pc.greater_equal(magnitude, 1e-4), pc.less(magnitude, upper)),
        pc.equal(magnitude, 0.0),
    )
    odd = pc.invert(usual.fill_null(True))
    if pc.any(odd).as_py():
        values = arr.filter(odd).to_pylist()
        fixed = pa.array([float_text(v, digits) for v in values], pa.string())
        text = pc.replace_with_mask(text, odd, fixed)
    return text.cast(BIN)


def _decimals(arr: pa.Array) -> pa.Array:
    """numeric_out: every digit of the scale, never an exponent.

    Arrow writes values below 1e-6 (and a zero of scale 7 or more) as '1E-7' / '0E-7'; those
    few are written again in Python, as PostgreSQL prints them ('0.0000001', '0.0000000').
    """
    text = arr.cast(pa.string())
    odd = pc.match_substring(text, "E").fill_null(False)
    if pc.any(odd).as_py():
        values = arr.filter(odd).to_pylist()
        fixed = pa.array([format(v, "f") for v in values], pa.string())
        text = pc.replace_with_mask(text, odd, fixed)
    return text.cast(BIN)


def float_text(value: float, digits: int = 15) -> str:
    """PostgreSQL's float8out (extra_float_digits >= 1): shortest exact digits.

    >>> [float_text(v) for v in (1e15, 123456789012.0, 1.5e-7, 0.0001, float('inf'), -0.0)]
    ['1e+15', '123456789012', '1.5e-07', '0.0001', 'Infinity', '-0']
    """
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    shortest = repr(value) if digits == 15 else str(np.float32(value))
    sign, numerals, exponent = decimal.Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)
    written = "".join(map(str, numerals))
    figures = written.rstrip("0")
    minus = "-" if sign else ""
    if not figures.lstrip("0"):
        return minus + "0"
    scientific = len(written) - 1 + exponent
    if scientific < -4 or scientific >= digits:
        mantissa = figures[0] + ("." + figures[1:] if len(figures) > 1 else "")
        return f"{minus}{mantissa}e{'-' if scientific < 0 else '+'}{abs(scientific):02d}"
    fixed = format(decimal.Decimal(shortest), "f")
    if "." in fixed:
        fixed = fixed.rstrip("0").rstrip(".")
    return fixed


def _strip_fraction(text: pa.Array) -> pa.Array:
    text = pc.replace_substring_regex(text, r"(\.\d*[1-9])0+$", r"\1")
    return pc.replace_substring_regex(text, r"\.0+$", "")


def _timestamps(arr: pa.Array) -> pa.Array:
    """ISO timestamps; whole seconds formatted by Arrow, fractions only where there are any."""
    arrow = arr.type
    micros = arr.cast(pa.timestamp("us", arrow.tz)).cast(pa.int64())
    seconds, fraction = np.divmod(arrays.values(micros, "int64"), 1_000_000)
    text = pa.array(seconds, pa.timestamp("s")).cast(pa.string()).cast(BIN)
    parts = [text]
    if fraction.any():
        padded = pa.array(fraction + 1_000_000).cast(pa.string())  # 1500000 -> '500000'
        digits = pc.utf8_rtrim(pc.utf8_slice_codeunits(padded, 1, 7), characters="0")
        dotted = pc.binary_join_element_wise(".", digits, "")
        parts.append(pc.if_else(pa.array(fraction != 0), dotted, "").cast(BIN))
    if arrow.tz is not None:  # the session time zone is UTC: PostgreSQL prints "+00"
        parts.append(pa.scalar(b"+00", BIN))
    joined = pc.binary_join_element_wise(*parts, b"") if len(parts) > 1 else text
    return pc.if_else(arr.is_valid(), joined, pa.scalar(None, BIN)) if arr.null_count else joined


def _per_value(arr: pa.Array, oid: int) -> pa.Array:
    render = _value_renderer(arr.type, oid)
    values = [None if v is None else render(v).encode() for v in arr.to_pylist()]
    return pa.array(values, BIN)


def _value_renderer(arrow: pa.DataType, oid: int) -> Callable[[Any], str]:
    if pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow):
        return lambda v: "\\x" + bytes(v).hex()
    if pa.types.is_fixed_size_binary(arrow) or pa.types.is_binary_view(arrow):
        return lambda v: "\\x" + bytes(v).hex()
    if pa.types.is_interval(arrow) or pa.types.is_duration(arrow):
        return interval_text
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        element = t.pg_type(arrow.value_type).oid
        inner = _value_renderer(arrow.value_type, element)
        return lambda v: array_text(v, inner)
    return lambda v: json.dumps(v, default=str, separators=(",", ":"))


def interval_text(value: Any) -> str:
    """PostgreSQL's interval output (IntervalStyle postgres).

    >>> interval_text(pa.scalar((14, 3, 3_723_500_000_000), pa.month_day_nano_interval()).as_py())
    '1 year 2 mons 3 days 01:02:03.5'
    """
    if isinstance(value, dt.timedelta):
        months, days, micros = 0, value.days, value.seconds * 1_000_000 + value.microseconds
    else:
        months, days, micros = value.months, value.days, value.nanoseconds // 1000
    parts = []
    years, months = divmod(months, 12) if months >= 0 else (-((-months) // 12), -((-months) % 12))
    for amount, unit in ((years, "year"), (months, "mon"), (days, "day")):
        if amount:
            parts.append(f"{amount} {unit}{'s' if abs(amount) != 1 else ''}")
    if micros or not parts:
        sign = "-" if micros < 0 else ""
        seconds, fraction = divmod(abs(micros), 1_000_000)
        hours, rest = divmod(seconds, 3600)
        clock = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
        if fraction:
            clock += f".{fraction:06d}".rstrip("0")
        parts.append(clock)
    return " ".join(parts)


_ARRAY_SPECIAL = set('{},"\\ \t\n')


def array_text(values: list[Any], render: Callable[[Any], str]) -> str:
    """A PostgreSQL array literal.

    >>> array_text([1, None, 3], str)
    '{1,NULL,3}'
    >>> array_text(['a b', 'x', ''], str)
    '{"a b",x,""}'
    """
    items = []
    for v in values:
        if v is None:
            items.append("NULL")
            continue
        text = _scalar_text(v, render)
        if not text or _ARRAY_SPECIAL & set(text) or text.upper() == "NULL":
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        items.append(text)
    return "{" + ",".join(items) + "}"


def _scalar_text(value: Any, render: Callable[[Any], str]) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        return text + ("+00" if value.tzinfo else "")
    if isinstance(value, (int, str, decimal.Decimal, dt.date, dt.time)):
        return str(value)
    return render(value)
