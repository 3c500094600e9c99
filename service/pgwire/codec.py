"""PostgreSQL protocol v3 framing: read frontend messages, build backend messages.

Every builder returns the complete message bytes (type byte, int32 length, body) so a
connection can batch several into one write.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PROTOCOL_V3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

_I32 = struct.Struct("!i")
_I16 = struct.Struct("!h")
_HEADER = struct.Struct("!ci")
MAX_MESSAGE_BYTES = 64 << 20  # a client claiming more is cut off (08P01), not buffered


class ProtocolViolation(Exception):
    """The client sent bytes that are not a valid protocol message."""


class Payload:
    """A cursor over one message body."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int16(self) -> int:
        (value,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return int(value)

    def int32(self) -> int:
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def cstring(self) -> str:
        end = self.data.index(b"\0", self.pos)
        value = self.data[self.pos : end].decode()
        self.pos = end + 1
        return value

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise ProtocolViolation("message shorter than its fields")
        value = self.data[self.pos : self.pos + count]
        self.pos += count
        return value

    def byte(self) -> bytes:
        return self.take(1)

    def int16s(self) -> list[int]:
        return [self.int16() for _ in range(self.int16())]

    def rest(self) -> bytes:
        value = self.data[self.pos :]
        self.pos = len(self.data)
        return value


@dataclass(frozen=True)
class Startup:
    """The first message of a connection: a startup packet, SSL/GSS request or cancel request."""

    code: int
    body: bytes

    def parameters(self) -> dict[str, str]:
        """The key/value pairs of a StartupMessage."""
        parts = self.body.split(b"\0")
        pairs = {}
        for key, value in zip(parts[0::2], parts[1::2], strict=False):
            if key:
                pairs[key.decode()] = value.decode()
        return pairs


async def read_startup(reader: asyncio.StreamReader) -> Startup:
    """Read an untyped startup-phase message."""
    (length,) = _I32.unpack(await reader.readexactly(4))
    if not 8 <= length <= 10_000:
        raise ProtocolViolation(f"bad startup packet length {length}")
    body = await reader.readexactly(length - 4)
    (code,) = _I32.unpack_from(body, 0)
    return Startup(code, body[4:])


async def read_message(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """Read one typed message: (type byte, body)."""
    kind, length = _HEADER.unpack(await reader.readexactly(5))
    if not 4 <= length <= MAX_MESSAGE_BYTES:
        raise ProtocolViolation(f"bad message length {length}")
    return kind, await reader.readexactly(length - 4)


def message(kind: bytes, body: bytes = b"") -> bytes:
    """A typed message with its length."""
    return kind + _I32.pack(len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def authentication(code: int, data: bytes = b"") -> bytes:
    return message(b"R", _I32.pack(code) + data)


def parameter_status(name: str, value: str) -> bytes:
    return message(b"S", cstr(name) + cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    return message(b"K", struct.pack("!ii", pid, secret))


def ready_for_query(status: bytes) -> bytes:
    return message(b"Z", status)


def command_complete(tag: str) -> bytes:
    return message(b"C", cstr(tag))


PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
NO_DATA = message(b"n")
EMPTY_QUERY = message(b"I")
PORTAL_SUSPENDED = message(b"s")
COPY_DONE = message(b"c")


def parameter_description(oids: Sequence[int]) -> bytes:
    return message(b"t", _I16.pack(len(oids)) + b"".join(_I32.pack(o) for o in oids))


@dataclass(frozen=True)
class Field:
    """One column of a RowDescription."""

    name: str
    type_oid: int
    type_size: int
    type_modifier: int = -1
    format: int = 0
    table_oid: int = 0
    column: int = 0


def row_description(fields: Iterable[Field]) -> bytes:
    items = list(fields)
    parts = [_I16.pack(len(items))]
    for f in items:
        parts.append(cstr(f.name))
        parts.append(
            struct.pack(
                "!ihihih", f.table_oid, f.column, f.type_oid, f.type_size, f.type_modifier, f.format
            )
        )
    return message(b"T", b"".join(parts))


def error_fields(kind: bytes, severity: str, code: str, text: str, **extra: str) -> bytes:
    """ErrorResponse ('E') or NoticeResponse ('N') with severity, SQLSTATE and message."""
    parts = [b"S" + cstr(severity), b"V" + cstr(severity), b"C" + cstr(code), b"M" + cstr(text)]
    letters = {"detail": b"D", "hint": b"H", "position": b"P"}
    for key, value in extra.items():
        parts.append(letters[key] + cstr(value))
    return message(kind, b"".join(parts) + b"\0")


def error_response(code: str, text: str, severity: str = "ERROR", **extra: str) -> bytes:
    return error_fields(b"E", severity, code, text, **extra)


def notice_response(code: str, text: str) -> bytes:
    return error_fields(b"N", "NOTICE", code, text)


def copy_out_response(columns: int, binary: bool = False) -> bytes:
    fmt = 1 if binary else 0
    return message(b"H", struct.pack("!bh", fmt, columns) + _I16.pack(fmt) * columns)


def copy_data(data: bytes) -> bytes:
    return message(b"d", data)
