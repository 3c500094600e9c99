"""Connection start: SSL negotiation, cancel requests, the startup packet, SCRAM-SHA-256."""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from service.pgwire import codec, scram

SASL = 10
SASL_CONTINUE = 11
SASL_FINAL = 12


@dataclass
class Hello:
    """What the client asked for in its startup packet."""

    user: str
    database: str
    parameters: dict[str, str]


class Rejected(Exception):
    """Startup ends here; `reply` (maybe empty) was or is to be sent."""

    def __init__(self, reply: bytes = b"") -> None:
        super().__init__("connection rejected")
        self.reply = reply


async def negotiate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    tls: ssl.SSLContext | None,
    cancel: Callable[[int, int], None],
) -> Hello:
    """Read startup-phase packets until a StartupMessage; answer SSL/GSS/cancel requests."""
    while True:
        packet = await codec.read_startup(reader)
        if packet.code == codec.SSL_REQUEST:
            if tls is None or writer.get_extra_info("sslcontext") is not None:
                writer.write(b"N")  # polite refusal: the client may go on in plain text
                await writer.drain()
                continue
            writer.write(b"S")
            await writer.drain()
            await writer.start_tls(tls)
            continue
        if packet.code == codec.GSSENC_REQUEST:
            writer.write(b"N")
            await writer.drain()
            continue
        if packet.code == codec.CANCEL_REQUEST:
            pid, secret = struct.unpack("!ii", packet.body[:8])
            cancel(pid, secret)
            raise Rejected()
        if packet.code >> 16 != 3:
            raise Rejected(
                codec.error_response(
                    "0A000",
                    f"unsupported frontend protocol {packet.code >> 16}.{packet.code & 0xFFFF}",
                    severity="FATAL",
                )
            )
        parameters = packet.parameters()
        user = parameters.get("user", "")
        if not user:
            raise Rejected(codec.error_response("28000", "no user name given", severity="FATAL"))
        return Hello(user, parameters.get("database") or user, parameters)


async def authenticate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    user: str,
    lookup: Callable[[str], Awaitable[Any]],
) -> Any:
    """Run SCRAM-SHA-256; return the user's stored secret or raise `Rejected`."""
    failed = codec.error_response(
        "28P01", f'password authentication failed for user "{user}"', severity="FATAL"
    )
    writer.write(codec.authentication(SASL, codec.cstr(scram.MECHANISM) + b"\0"))
    await writer.drain()
    secret = await lookup(user)
    exchange = scram.ScramExchange(secret)
    kind, body = await codec.read_message(reader)
    if kind != b"p":
        raise Rejected(failed)
    payload = codec.Payload(body)
    mechanism = payload.cstring()
    if mechanism != scram.MECHANISM:
        raise Rejected(
            codec.error_response("28000", f"unsupported SASL mechanism {mechanism}", "FATAL")
        )
    length = payload.int32()
    try:
        writer.write(codec.authentication(SASL_CONTINUE, exchange.first(payload.take(length))))
        await writer.drain()
        kind, body = await codec.read_message(reader)
        if kind != b"p":
            raise Rejected(failed)
        final = exchange.final(body)
    except (scram.AuthFailed, ValueError, UnicodeDecodeError):
        raise Rejected(failed) from None
    writer.write(codec.authentication(SASL_FINAL, final) + codec.authentication(0))
    return secret
