"""Hostile clients: password guessing, connection hoarding, slowloris, oversized messages.

Each test runs its own server (its own throttle and counters) and checks that the attack is
refused with a clear error, that the log never holds the password tried, and that an honest
client is served meanwhile.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from service.http import create_app
from service.pgwire import start
from service.serve.server import Limits, Server
from service.serve.throttle import AuthThrottle
from tests.warehouses import Warehouses
from warehouse.security import users

PASSWORD = "right-pw"


@contextlib.contextmanager
def serving_ann(path: Path, limits: Limits) -> Iterator[Server]:
    """A server on a fresh file with one reader, ann."""
    with Server(str(path), limits=limits) as served:
        cur = served.engine.cursor()
        users.add_user(cur, "ann", "reader", PASSWORD)
        cur.close()
        yield served


@pytest.fixture
def server(tmp_path: Path, warehouses: Warehouses) -> Iterator[Server]:
    limits = Limits(max_connections_per_user=3, startup_timeout_s=1.0)
    with serving_ann(warehouses.empty(tmp_path / "w.duckdb", shipped=True), limits) as served:
        served.auth_throttle = AuthThrottle(max_failures=3, window_s=60, lockout_s=30)
        yield served


def dsn(port: int, password: str = PASSWORD) -> str:
    return f"host=127.0.0.1 port={port} dbname=wanka user=ann password={password} sslmode=disable"


def connects_again(port: int, answer: int) -> None:
    """A new connection gets in (and `select answer` answers) once the server sees a hang-up."""
    deadline = time.monotonic() + 10
    while True:  # the server notices the hang-up asynchronously
        try:
            with psycopg.connect(dsn(port)) as again:
                assert again.execute(f"select {answer}").fetchone() == (answer,)
            return
        except psycopg.OperationalError:
            assert time.monotonic() < deadline
            time.sleep(0.05)  # polling for the server to notice, not timing anything


def test_http_guessing_is_locked_out_and_logged_without_the_password(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    client = TestClient(create_app(server, open_locally=False))
    body = {"sql": "SELECT 1"}
    with caplog.at_level(logging.WARNING, logger="wanka.auth"):
        for attempt in range(3):
            wrong = client.post("/v1/query", json=body, auth=("ann", f"guess-{attempt}"))
            assert wrong.status_code == 401
        locked = client.post("/v1/query", json=body, auth=("ann", PASSWORD))
    assert locked.status_code == 429 and "too many failed logins" in locked.json()["error"]
    assert int(locked.headers["retry-after"]) > 0
    assert "ann" in caplog.text and "guess-" not in caplog.text and PASSWORD not in caplog.text


def test_pgwire_guessing_is_locked_out_across_faces(server: Server) -> None:
    handle = start(server, "127.0.0.1", 0)
    try:
        for attempt in range(3):
            with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
                psycopg.connect(dsn(handle.port, f"guess-{attempt}"))
        with pytest.raises(psycopg.OperationalError, match="too many failed logins"):
            psycopg.connect(dsn(handle.port))  # even the right password, for now
        client = TestClient(create_app(server, open_locally=False))
        # the HTTP face has its own client address here ("testclient"): it is not locked
        assert client.post("/v1/query", json={"sql": "SELECT 1"}, auth=("ann", PASSWORD)).is_success
    finally:
        handle.stop()


def test_connections_per_user_are_capped(server: Server) -> None:
    handle = start(server, "127.0.0.1", 0)
    held = [psycopg.connect(dsn(handle.port)) for _ in range(3)]
    try:
        with pytest.raises(psycopg.OperationalError, match="too many connections for user ann"):
            psycopg.connect(dsn(handle.port))
        held.pop().close()
        connects_again(handle.port, 1)
    finally:
        for conn in held:
            conn.close()
        handle.stop()


def test_connections_in_all_are_capped(tmp_path: Path, warehouses: Warehouses) -> None:
    limits = Limits(max_connections=2)
    with serving_ann(warehouses.empty(tmp_path / "w.duckdb", shipped=True), limits) as served:
        handle = start(served, "127.0.0.1", 0)
        held = [psycopg.connect(dsn(handle.port)) for _ in range(2)]
        try:
            with pytest.raises(psycopg.OperationalError, match="too many clients already"):
                psycopg.connect(dsn(handle.port))
            assert held[0].execute("select 3").fetchone() == (3,)  # the others are served
            held.pop().close()
            connects_again(handle.port, 4)
        finally:
            for conn in held:
                conn.close()
            handle.stop()


def test_slowloris_startup_is_dropped_while_others_are_served(server: Server) -> None:
    handle = start(server, "127.0.0.1", 0)
    try:
        slow = socket.create_connection(("127.0.0.1", handle.port))
        slow.sendall(struct.pack("!i", 40)[:2])  # half a length, then nothing
        with psycopg.connect(dsn(handle.port)) as honest:
            assert honest.execute("select 2").fetchone() == (2,)
        slow.settimeout(10)
        answer = slow.recv(4096)  # the server gives up on it after startup_timeout_s
        assert answer == b"" or b"took more than" in answer
        slow.close()
    finally:
        handle.stop()


def test_an_oversized_message_is_refused_and_the_server_stays_up(server: Server) -> None:
    handle = start(server, "127.0.0.1", 0)
    try:
        with psycopg.connect(dsn(handle.port)) as conn:
            raw = socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM)
            raw.sendall(b"Q" + struct.pack("!i", 512 << 20))  # claims a 512 MiB query
            raw.settimeout(10)
            reply = raw.recv(4096)
            assert b"08P01" in reply and b"bad message length" in reply
            raw.close()
        with psycopg.connect(dsn(handle.port)) as other:
            assert other.execute("select 3").fetchone() == (3,)
    finally:
        handle.stop()


def test_basic_header_of_a_token_is_logged_as_a_token() -> None:
    from service.http.auth import _claimed_user

    basic = "Basic " + base64.b64encode(b"ann:secret").decode()
    assert _claimed_user(basic) == "ann" and _claimed_user("Bearer wk_abc") == "<token>"


def test_stopping_ends_connections_mid_statement(server: Server) -> None:
    handle = start(server, "127.0.0.1", 0)
    conn = psycopg.connect(dsn(handle.port))
    failed: list[BaseException] = []

    def long_query() -> None:
        try:
            conn.execute("SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3")
        except psycopg.Error as error:
            failed.append(error)

    runner = threading.Thread(target=long_query)
    runner.start()
    time.sleep(0.5)  # let the statement start inside DuckDB
    started = time.monotonic()
    handle.stop()
    runner.join(timeout=30)
    assert time.monotonic() - started < 6 and not runner.is_alive()
    assert failed  # the client hears of it rather than hanging
    conn.close()
