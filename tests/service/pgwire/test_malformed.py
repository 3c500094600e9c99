"""Malformed pgwire input, generated: the server answers or hangs up, and keeps serving others.

Hypothesis writes startup packets and typed messages with valid framing and garbage inside
(and garbage framing too). After each, the connection must end with an ErrorResponse or a
hang-up, or carry on; never a hang, and an honest client on another connection still gets its
answer. No connection thread may die of an unexpected exception (they are logged by
`wanka.pgwire`).
"""

from __future__ import annotations

import logging
import socket
import struct

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.pgwire import codec
from tests.conftest import examples

STARTUP = struct.pack("!i", codec.PROTOCOL_V3) + b"user\0fuzz\0database\0wanka\0\0"
KINDS = st.sampled_from(list(b"QPBDESCHXdcfpFZ\x00\xff")).map(lambda k: bytes([k]))
BODIES = st.one_of(
    st.binary(max_size=64),
    # plausible pieces: cstrings, counts, lengths that lie
    st.lists(
        st.one_of(
            st.binary(max_size=12).map(lambda b: b.replace(b"\0", b"") + b"\0"),
            st.integers(-(2**15), 2**15 - 1).map(lambda n: struct.pack("!h", n)),
            st.integers(-(2**31), 2**31 - 1).map(lambda n: struct.pack("!i", n)),
            st.sampled_from([b"S", b"P", b"SELECT 1\0", b"\0\0", b"\xff\xfe"]),
        ),
        max_size=8,
    ).map(b"".join),
)


def typed(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def drain(sock: socket.socket) -> bytes:
    """What the server says until it waits for us (ReadyForQuery) or hangs up."""
    sock.settimeout(10)
    got = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            pytest.fail(f"the server neither answered nor hung up; so far {got[:200]!r}")
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk
        if got.endswith((b"Z\x00\x00\x00\x05I", b"Z\x00\x00\x00\x05E", b"Z\x00\x00\x00\x05T")):
            return got


def assert_framed(answer: bytes) -> None:
    """Whatever came back is whole protocol messages of known types."""
    at = 0
    while at < len(answer):
        kind = answer[at : at + 1]
        assert kind in b"123CDEIKNRSTZnst", f"unknown message type {kind!r} in {answer[:200]!r}"
        (length,) = struct.unpack_from("!i", answer, at + 1)
        assert length >= 4 and at + 1 + length <= len(answer), f"bad framing: {answer[:200]!r}"
        at += 1 + length


def honest_answer(port: int) -> None:
    dsn = f"host=127.0.0.1 port={port} dbname=wanka user=ok sslmode=disable"
    with psycopg.connect(dsn, connect_timeout=10) as conn:
        assert conn.execute("select 6 * 7").fetchone() == (42,)


@settings(
    max_examples=examples(1.5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(messages=st.lists(st.tuples(KINDS, BODIES), min_size=1, max_size=4))
def test_garbage_after_login(
    port: int, messages: list[tuple[bytes, bytes]], caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.ERROR, logger="wanka.pgwire"),
        socket.create_connection(("127.0.0.1", port), timeout=10) as sock,
    ):
        sock.sendall(struct.pack("!i", len(STARTUP) + 4) + STARTUP)
        assert drain(sock).endswith(b"Z\x00\x00\x00\x05I")
        payload = b"".join(typed(k, b) for k, b in messages) + typed(b"S", b"")
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it hung up on an earlier message: allowed
        else:
            assert_framed(drain(sock))
    assert "connection thread failed" not in caplog.text
    honest_answer(port)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(packet=st.one_of(BODIES, st.binary(max_size=16)), claim=st.integers(-5, 20_000))
def test_garbage_startup(port: int, packet: bytes, claim: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(struct.pack("!i", claim) + packet)
            sock.shutdown(socket.SHUT_WR)  # nothing more is coming: answer or hang up now
        except OSError:
            pass
        drain(sock)
    honest_answer(port)
