"""Server and Session: the one query path of every face, its limits and lock-down."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from service.serve.server import Limits, Server
from service.serve.session import QueryTimeout
from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.security.policy import Refused
from warehouse.security.users import User, add_user

SLOW = "SELECT sum(hash(a.range * b.range)) FROM range(200000) a, range(200000) b"


@pytest.fixture(scope="module")
def server(warehouses: Warehouses) -> Iterator[Server]:
    limits = Limits(timeout_s=30, max_rows_json=1000)
    with (
        warehouses.scratch() as folder,  # in memory, as the :memory: this stands in for
        Server(str(warehouses.empty(folder / "w.duckdb", shipped=True)), limits=limits) as served,
    ):
        cur = served.engine.cursor()
        for role in ("reader", "writer", "admin"):
            add_user(cur, role, role, "pw")
        cur.close()
        yield served


def test_reader_query_streams_arrow(server: Server) -> None:
    with server.session(User("reader", "reader")) as session:
        result = session.run("SELECT range AS i FROM range(100000)")
        assert result.statement == "SELECT"
        assert result.reader.read_all().num_rows == 100000
        assert not result.truncated


def test_row_cap_truncates(server: Server) -> None:
    with server.session(User("reader", "reader"), fmt="json") as session:
        result = session.run("SELECT * FROM range(5000)", max_rows=10_000)
        assert result.reader.read_all().num_rows == 1000 and result.truncated
        result = session.run("SELECT * FROM range(5000)", max_rows=7)
        assert result.reader.read_all().num_rows == 7 and result.truncated


def test_timeout_interrupts_duckdb(server: Server) -> None:
    with server.session(User("reader", "reader")) as session:
        with pytest.raises(QueryTimeout, match=r"time limit of 0\.2 s"):
            session.run(SLOW, timeout_s=0.2).reader.read_all()
        assert session.run("SELECT 42 AS x").reader.read_all().column(0).to_pylist() == [42]


def test_interrupt_from_another_thread(server: Server) -> None:
    with server.session(User("reader", "reader")) as session:
        started = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            started.set()
            try:
                session.run(SLOW).reader.read_all()
            except BaseException as error:
                errors.append(error)

        worker = threading.Thread(target=run)
        worker.start()
        started.wait()
        while worker.is_alive():
            session.interrupt()
            worker.join(timeout=0.05)
        assert errors and "cancel" in str(errors[0])


def test_refused_and_bad_sql(server: Server) -> None:
    with server.session(User("reader", "reader")) as session:
        with pytest.raises(Refused, match="COPY is refused"):
            session.run("COPY (SELECT 1) TO '/tmp/x.csv'")
        with pytest.raises(UserError, match="Parser Error"):
            session.run("SELEC 1")


def test_writer_dml_rowcount(server: Server) -> None:
    with server.session(User("writer", "writer")) as session:
        result = session.run("INSERT INTO sites (site) VALUES ('a'), ('b')")
        assert (result.statement, result.rowcount) == ("INSERT", 2)


def test_engine_is_locked_down_even_for_admin_sql(server: Server) -> None:
    cur = server.engine.cursor()
    try:
        with pytest.raises(Exception, match="disabled by configuration"):
            cur.execute("SELECT * FROM read_text('/etc/hostname')")
        with pytest.raises(Exception, match="locked"):
            cur.execute("SET enable_external_access = true")
    finally:
        cur.close()


def test_credentials_cached_and_checked(server: Server) -> None:
    assert server.check_password("reader", "pw") == User("reader", "reader")
    assert server.check_password("reader", "pw") == User("reader", "reader")
    assert server.check_password("reader", "nope") is None
    assert server.check_token("wk_nope") is None


def test_memory_limit_fails_the_query_not_the_server() -> None:
    from service.serve.session import OutOfMemory

    with (
        Server(":memory:", limits=Limits(memory_limit="64MB")) as small,
        small.session(User("admin", "admin")) as session,
    ):
        with pytest.raises(OutOfMemory, match="more memory than the server allows"):
            session.run("SELECT list(range) AS l FROM range(50000000)").reader.read_all()
        assert session.run("SELECT 1 AS ok").reader.read_all().num_rows == 1
