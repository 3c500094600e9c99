"""Bound parameters (text or binary) as typed SQL literals.

wanka inlines parameters into the statement as literals rather than binding them as DuckDB
prepared-statement values: PostgreSQL gives an untyped parameter the type its context needs
(`WHERE gpu = $1` with '3'), and a string literal does exactly that in DuckDB, while a bound
VARCHAR value would not compare with an integer. Literals are built as sqlglot nodes, so quoting is
the generator's job, never string concatenation.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import struct
import uuid
from collections.abc import Callable

from sqlglot import exp

from service.pgwire import types as t

PG_EPOCH = dt.datetime(2000, 1, 1)
PG_EPOCH_DATE = dt.date(2000, 1, 1)


class ParameterError(ValueError):
    """A parameter value that cannot be read as its declared type (SQLSTATE 22P02)."""


def _cast(value: exp.Expr, oid: int) -> exp.Expr:
    return exp.cast(value, t.DUCKDB_TYPE[oid], dialect="duckdb")


def literal(raw: bytes | None, oid: int, binary: bool) -> exp.Expr:
    """The SQL literal for one parameter value of type `oid` in the given format."""
    if raw is None:
        return _cast(exp.null(), oid) if oid in t.DUCKDB_TYPE else exp.null()
    try:
        if binary:
            return _from_binary(raw, oid)
        return _from_text(raw.decode(), oid)
    except (ValueError, struct.error, UnicodeDecodeError, decimal.InvalidOperation) as error:
        raise ParameterError(f"invalid input for parameter of type {oid}: {error}") from None


_DATE_WITH_ZONE = re.compile(r"^(\d{4,}-\d{2}-\d{2}) [+-]\d{2}(:?\d{2})?$")


def _from_text(text: str, oid: int) -> exp.Expr:
    dated = _DATE_WITH_ZONE.match(text)
    if dated and oid in (0, t.TEXT, t.VARCHAR, t.DATE):  # pgjdbc's setDate: '2024-03-01 +00'
        text = dated[1]
    if oid in (t.INT2, t.INT4, t.INT8, t.OID):
        return _cast(exp.Literal.number(int(text)), oid)
    if oid == t.NUMERIC:
        number = decimal.Decimal(text)
        return (
            exp.Literal.number(str(number))
            if number.is_finite()
            else _cast(exp.Literal.string(text), t.FLOAT8)
        )
    if oid == t.BOOL:
        return exp.Boolean(this=text.strip().lower() in ("t", "true", "1", "on", "yes", "y"))
    if oid == t.BYTEA:
        blob = bytes.fromhex(text[2:]) if text.startswith("\\x") else text.encode()
        return _blob(blob)
    if oid in t.ELEMENT_OF:
        element = t.ELEMENT_OF[oid]
        return exp.Array(
            expressions=[
                literal(None if v is None else v.encode(), element, False)
                for v in parse_array(text)
            ]
        )
    if oid in (t.FLOAT4, t.FLOAT8, t.DATE, t.TIME, t.TIMESTAMP, t.TIMESTAMPTZ, t.INTERVAL):
        return _cast(exp.Literal.string(text), oid)
    if oid in (t.UUID, t.JSON, t.JSONB):
        return _cast(exp.Literal.string(text), oid)
    return exp.Literal.string(text)  # text, varchar, unknown: typed by its context


def _blob(blob: bytes) -> exp.Expr:
    return exp.Anonymous(this="from_hex", expressions=[exp.Literal.string(blob.hex())])


def _from_binary(raw: bytes, oid: int) -> exp.Expr:
    fixed = {t.INT2: "!h", t.INT4: "!i", t.INT8: "!q", t.OID: "!I"}
    if oid in fixed:
        return _cast(exp.Literal.number(struct.unpack(fixed[oid], raw)[0]), oid)
    if oid in (t.FLOAT4, t.FLOAT8):
        (number,) = struct.unpack("!f" if oid == t.FLOAT4 else "!d", raw)
        return _cast(exp.Literal.string(repr(number)), oid)
    if oid in _AS_TEXT:
        return _cast(exp.Literal.string(_AS_TEXT[oid](raw)), oid)
    if oid == t.BOOL:
        return exp.Boolean(this=raw != b"\0")
    if oid == t.BYTEA:
        return _blob(raw)
    if oid == t.NUMERIC:
        return exp.Literal.number(str(numeric_recv(raw)))
    if oid in t.ELEMENT_OF:
        return exp.Array(expressions=_array_recv(raw))
    return exp.Literal.string(raw.decode())


def _date_text(raw: bytes) -> str:
    (days,) = struct.unpack("!i", raw)
    return str(PG_EPOCH_DATE + dt.timedelta(days=days))


def _timestamp_text(raw: bytes, zone: str = "") -> str:
    (micros,) = struct.unpack("!q", raw)
    return (PG_EPOCH + dt.timedelta(microseconds=micros)).isoformat(sep=" ") + zone


def _time_text(raw: bytes) -> str:
    (micros,) = struct.unpack("!q", raw)
    return (dt.datetime.min + dt.timedelta(microseconds=micros)).time().isoformat()


def _interval_text(raw: bytes) -> str:
    micros, days, months = struct.unpack("!qii", raw)
    return f"{months} months {days} days {micros} microseconds"


#: Binary values that reach DuckDB as the text of a cast literal.
_AS_TEXT: dict[int, Callable[[bytes], str]] = {
    t.DATE: _date_text,
    t.TIMESTAMP: _timestamp_text,
    t.TIMESTAMPTZ: lambda raw: _timestamp_text(raw, "+00"),
    t.TIME: _time_text,
    t.INTERVAL: _interval_text,
    t.UUID: lambda raw: str(uuid.UUID(bytes=raw)),
    t.JSONB: lambda raw: raw[1:].decode(),  # version byte, then the text
}


def numeric_recv(raw: bytes) -> decimal.Decimal:
    """PostgreSQL's binary numeric as a Decimal.

    >>> numeric_recv(bytes.fromhex('0003000100000003000109291a7c'))
    Decimal('12345.678')
    """
    count, weight, sign, scale = struct.unpack_from("!hhHh", raw)
    if sign == 0xC000:
        return decimal.Decimal("NaN")
    groups = struct.unpack_from(f"!{count}H", raw, 8)
    value = decimal.Decimal(0)
    for i, group in enumerate(groups):
        value += decimal.Decimal(group).scaleb(4 * (weight - i))
    value = value.quantize(decimal.Decimal(1).scaleb(-scale))
    return -value if sign == 0x4000 else value


def _array_recv(raw: bytes) -> list[exp.Expr]:
    ndim, _has_null, element = struct.unpack_from("!iiI", raw)
    if ndim == 0:
        return []
    if ndim != 1:
        raise ValueError("only one-dimensional arrays are supported")
    (length, _lower) = struct.unpack_from("!ii", raw, 12)
    pos, items = 20, []
    for _ in range(length):
        (size,) = struct.unpack_from("!i", raw, pos)
        pos += 4
        if size < 0:
            items.append(literal(None, element, True))
            continue
        items.append(literal(raw[pos : pos + size], element, True))
        pos += size
    return items


def parse_array(text: str) -> list[str | None]:
    """The elements of a one-dimensional PostgreSQL array literal.

    >>> parse_array('{1,NULL,"a,b","q\\\\"x"}')
    ['1', None, 'a,b', 'q"x']
    """
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"malformed array literal {text!r}")
    body = body[1:-1]
    items: list[str | None] = []
    i, n = 0, len(body)
    while i < n:
        if body[i] == '"':
            i += 1
            chars = []
            while body[i] != '"':
                if body[i] == "\\":
                    i += 1
                chars.append(body[i])
                i += 1
            items.append("".join(chars))
            i += 1
        else:
            end = body.find(",", i)
            end = n if end < 0 else end
            word = body[i:end].strip()
            items.append(None if word.upper() == "NULL" else word)
            i = end
        if i < n and body[i] == ",":
            i += 1
    return items
