"""Raw protocol: what drivers like pgjdbc do that psycopg does not (Execute with a row limit,
named portals, Describe of a statement, errors inside an extended batch, Flush)."""

from __future__ import annotations

import socket
import struct

from service.pgwire import codec


class Client:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        body = struct.pack("!i", codec.PROTOCOL_V3) + b"user\0raw\0database\0wanka\0\0"
        self.sock.sendall(struct.pack("!i", len(body) + 4) + body)
        assert self.until(b"Z")[-1] == (b"Z", b"I")

    def send(self, *messages: bytes) -> None:
        self.sock.sendall(b"".join(messages))

    def read(self) -> tuple[bytes, bytes]:
        head = self._exactly(5)
        kind, length = head[:1], struct.unpack("!i", head[1:])[0]
        return kind, self._exactly(length - 4)

    def _exactly(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            assert chunk, "server closed the connection"
            data += chunk
        return data

    def until(self, kind: bytes) -> list[tuple[bytes, bytes]]:
        got = []
        while True:
            message = self.read()
            got.append(message)
            if message[0] == kind:
                return got


def parse(name: str, sql: str, oids: tuple[int, ...] = ()) -> bytes:
    body = codec.cstr(name) + codec.cstr(sql) + struct.pack("!h", len(oids))
    return codec.message(b"P", body + b"".join(struct.pack("!i", o) for o in oids))


def bind(portal: str, statement: str, values: tuple[bytes, ...] = ()) -> bytes:
    body = codec.cstr(portal) + codec.cstr(statement) + struct.pack("!h", 0)
    body += struct.pack("!h", len(values))
    body += b"".join(struct.pack("!i", len(v)) + v for v in values)
    return codec.message(b"B", body + struct.pack("!h", 0))


def execute(portal: str, max_rows: int = 0) -> bytes:
    return codec.message(b"E", codec.cstr(portal) + struct.pack("!i", max_rows))


def describe(kind: bytes, name: str) -> bytes:
    return codec.message(b"D", kind + codec.cstr(name))


SYNC = codec.message(b"S")


def kinds(messages: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(k for k, _ in messages)


def test_execute_with_row_limit_suspends_the_portal(port: int) -> None:
    c = Client(port)
    c.send(parse("s1", "select range from range(5)"), bind("p1", "s1"), execute("p1", 2), SYNC)
    first = c.until(b"Z")
    assert kinds(first) == b"12DDsZ"  # ParseComplete BindComplete 2 DataRows PortalSuspended
    c.send(execute("p1", 2), SYNC)
    assert kinds(c.until(b"Z")) == b"DDsZ"
    c.send(execute("p1", 2), SYNC)
    done = c.until(b"Z")
    assert kinds(done) == b"DCZ" and done[1][1] == b"SELECT 5\0"


def test_describe_statement_gives_parameter_and_row_types(port: int) -> None:
    c = Client(port)
    c.send(parse("s2", "select $1::int + 1 as n, 'x' as t", (23,)), describe(b"S", "s2"), SYNC)
    got = c.until(b"Z")
    assert kinds(got) == b"1tTZ"
    assert got[1][1] == struct.pack("!hi", 1, 23)
    assert b"n\0" in got[2][1] and b"t\0" in got[2][1]
    c.send(bind("", "s2", (b"41",)), execute(""), SYNC)
    rows = c.until(b"Z")
    assert rows[1] == (b"D", struct.pack("!hi", 2, 2) + b"42" + struct.pack("!i", 1) + b"x")


def test_error_skips_to_sync_and_the_connection_recovers(port: int) -> None:
    c = Client(port)
    c.send(parse("", "selec 1"), bind("", ""), execute(""), SYNC)
    got = c.until(b"Z")  # DuckDB finds the error when it runs the statement, not at Parse
    assert kinds(got).endswith(b"EZ") and b"C42601\0" in got[-2][1]
    c.send(parse("", "select 1"), bind("", ""), execute(""), codec.message(b"H"))
    assert kinds(c.until(b"C")) == b"12DC"  # Flush answers without waiting for Sync
    c.send(SYNC)
    assert c.until(b"Z")[-1] == (b"Z", b"I")


def test_unknown_prepared_statement_and_empty_query(port: int) -> None:
    c = Client(port)
    c.send(bind("", "nope"), SYNC)
    got = c.until(b"Z")
    assert b"C26000\0" in got[0][1]
    c.send(codec.message(b"Q", b"\0"))
    assert kinds(c.until(b"Z")) == b"IZ"


def test_transaction_status_in_ready_for_query(port: int) -> None:
    c = Client(port)
    c.send(codec.message(b"Q", b"begin\0"))
    assert c.until(b"Z")[-1] == (b"Z", b"T")
    c.send(codec.message(b"Q", b"select * from nowhere\0"))
    assert c.until(b"Z")[-1] == (b"Z", b"E")
    c.send(codec.message(b"Q", b"select 1\0"))
    got = c.until(b"Z")
    assert b"C25P02\0" in got[0][1] and got[-1] == (b"Z", b"E")
    c.send(codec.message(b"Q", b"rollback\0"))
    assert c.until(b"Z")[-1] == (b"Z", b"I")


def test_ssl_request_without_certificate_gets_n(port: int) -> None:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(struct.pack("!ii", 8, codec.SSL_REQUEST))
    assert sock.recv(1) == b"N"
    sock.close()


def test_multiple_statements_in_one_query(port: int) -> None:
    c = Client(port)
    c.send(codec.message(b"Q", b"select 1; select 2 as b; set application_name = 'x'\0"))
    got = c.until(b"Z")
    assert kinds(got) == b"TDCTDCSCZ"
