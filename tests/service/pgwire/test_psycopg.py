"""psycopg 3 against the pgwire endpoint: parameters, prepared statements, binary, cursors."""

from __future__ import annotations

import datetime as dt
import decimal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import errors

from tests.service.pgwire.conftest import Served
from tests.warehouses import Warehouses


@pytest.fixture
def conn(served: Served) -> Iterator[psycopg.Connection]:
    with psycopg.connect(served.dsn("admin"), autocommit=True) as connection:
        yield connection


@pytest.fixture
def reader(served: Served) -> Iterator[psycopg.Connection]:
    with psycopg.connect(served.dsn("reader"), autocommit=True) as connection:
        yield connection


def test_server_looks_like_postgresql_15(conn: psycopg.Connection) -> None:
    assert conn.info.server_version == 150000
    assert conn.info.parameter_status("server_version") == "15.0"
    row = conn.execute("select version()").fetchone()
    assert row is not None
    version = row[0]
    assert version.startswith("PostgreSQL 15.0 (wanka")
    assert conn.execute("show server_version_num").fetchone() == ("150000",)


def test_wrong_password_is_refused_with_28P01(served: Served) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(served.dsn("reader", password="nope"))
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(served.dsn("nobody"))


def test_ssl_request_is_refused_politely_without_a_certificate(served: Served) -> None:
    with psycopg.connect(served.dsn("reader").replace("sslmode=disable", "sslmode=prefer")) as c:
        assert c.execute("select 1").fetchone() == (1,)
        assert c.pgconn.ssl_in_use is False


@pytest.mark.parametrize("binary", [False, True])
def test_parameters_of_every_type_round_trip(conn: psycopg.Connection, binary: bool) -> None:
    values = [
        7,
        2**40,
        1.25,
        decimal.Decimal("12345.678"),
        "it's \\ text",
        True,
        dt.date(2024, 3, 1),
        dt.datetime(2024, 3, 1, 12, 30, 0, 250000),
        dt.datetime(2024, 3, 1, 12, 30, tzinfo=dt.UTC),
        dt.timedelta(days=1, hours=2, microseconds=5),
        uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        b"\x00\xff\x10",
        [1, 2, 3],
        ["a b", "c"],
        None,
    ]
    placeholders = ", ".join(["%s"] * len(values))
    with conn.cursor(binary=binary) as cur:
        row = cur.execute(f"select {placeholders}", values).fetchone()
    expected = list(values)
    expected[10] = str(values[10])  # DuckDB hands UUIDs to Arrow as text
    expected[13] = '{"a b",c}'  # psycopg sends a list of str untyped: PostgreSQL says text too
    assert row is not None
    assert list(row) == expected


def test_untyped_text_parameter_takes_its_type_from_context(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        "select i from pg_types_probe where i = %s::text::int or t = %s order by i", ["1", "it's"]
    ).fetchall()
    assert rows == [(1,), (2,)]


@pytest.mark.parametrize("binary", [False, True])
def test_result_types_and_values(conn: psycopg.Connection, binary: bool) -> None:
    with conn.cursor(binary=binary) as cur:
        cur.execute("select * from pg_types_probe order by i nulls last")
        rows = cur.fetchall()
        assert cur.description is not None
        oids = [d.type_code for d in cur.description]
    assert oids == [23, 20, 21, 701, 700, 1700, 25, 16, 1082, 1114, 1184, 1186, 25, 17, 1007, 1009]
    first = rows[0]
    assert first[:8] == (1, 9000000000, 7, 1.5, 2.25, decimal.Decimal("12345.678"), "gpu001", True)
    assert first[8:12] == (
        dt.date(2024, 3, 1),
        dt.datetime(2024, 3, 1, 12, 0, 0, 500000),
        dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.UTC),
        dt.timedelta(days=1, hours=2),
    )
    assert first[13:] == (b"\x00\xff", [1, 2, None], ["a b", "c"])
    assert rows[1][5] == decimal.Decimal("-0.500") and rows[1][6] == "it's"
    assert rows[2] == (None,) * 16


def test_prepared_statement_reused(conn: psycopg.Connection) -> None:
    for i in range(8):  # psycopg prepares server-side after 5 runs
        assert conn.execute("select %s::int + 1 as n", [i], prepare=i > 2).fetchone() == (i + 1,)


def test_named_cursor_fetches_in_portions(conn: psycopg.Connection) -> None:
    with conn.transaction(), conn.cursor(name="big") as cur:
        cur.itersize = 1000
        cur.execute("select range as n from range(5000)")
        first = cur.fetchmany(10)
        rest = cur.fetchall()
    assert [r[0] for r in first] == list(range(10))
    assert len(rest) == 4990 and rest[-1] == (4999,)


def test_catalog_names_are_typed_name_in_text_binary_and_named_cursors(
    conn: psycopg.Connection,
) -> None:
    """relname is `name` (19), relkind `"char"` (18), oid `oid` (26) however the rows travel."""
    sql = "select c.relname, c.relkind, c.oid from pg_catalog.pg_class c where c.relname = 'nodes'"
    for binary in (False, True):
        with conn.cursor(binary=binary) as cur:
            cur.execute(sql)
            assert [d.type_code for d in cur.description or []] == [19, 18, 26]
            row = cur.fetchone()
            assert row is not None and row[:2] == ("nodes", "r") and isinstance(row[2], int)
    with conn.transaction(), conn.cursor(name="catalog") as named:
        named.execute(sql)
        assert named.fetchall()[0][:2] == ("nodes", "r")
        assert [d.type_code for d in named.description or []] == [19, 18, 26]


def test_many_rows_stream_in_batches(conn: psycopg.Connection) -> None:
    total = conn.execute("select count(*), sum(n) from (select range as n from range(200000))")
    assert total.fetchone() == (200000, 199999 * 200000 // 2)
    with conn.cursor(binary=True) as cur:
        rows = cur.execute(
            "select range::int as n, 'x' || range as s from range(100000)"
        ).fetchall()
    assert len(rows) == 100000 and rows[-1] == (99999, "x99999")


def _status(c: psycopg.Connection) -> psycopg.pq.TransactionStatus:
    """The status now (a call, so that mypy does not carry one assert's narrowing to the next)."""
    return c.info.transaction_status


def test_transaction_error_state_and_rollback(served: Served) -> None:
    with psycopg.connect(served.dsn("admin")) as c:  # not autocommit: psycopg sends BEGIN
        c.execute("create table if not exists tx_probe (n int)")
        c.commit()
        c.execute("insert into tx_probe values (1)")
        assert _status(c) == psycopg.pq.TransactionStatus.INTRANS
        with pytest.raises(errors.UndefinedTable):
            c.execute("select * from no_such_table")
        assert _status(c) == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(errors.InFailedSqlTransaction):
            c.execute("select 1")
        c.rollback()
        assert c.execute("select count(*) from tx_probe").fetchone() == (0,)
        c.execute("insert into tx_probe values (2)")
        c.commit()
        assert c.execute("select count(*) from tx_probe").fetchone() == (1,)
        c.execute("drop table tx_probe")
        c.commit()


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        ("selec 1", errors.SyntaxError),
        ("select * from nope", errors.UndefinedTable),
        ("select nope from pg_types_probe", errors.UndefinedColumn),
        ("select 1/0::int", errors.DivisionByZero),
    ],
)
def test_errors_carry_sqlstate(conn: psycopg.Connection, sql: str, error: type) -> None:
    with pytest.raises(error):
        conn.execute(sql)
    assert conn.execute("select 1").fetchone() == (1,)  # the connection is still usable


def test_reader_role_is_read_only(reader: psycopg.Connection) -> None:
    with pytest.raises(errors.InsufficientPrivilege, match="reader"):
        reader.execute("delete from pg_types_probe")
    with pytest.raises(errors.InsufficientPrivilege):
        reader.execute("select * from wanka.users")
    assert reader.execute("select count(*) from public.pg_types_probe").fetchone() == (3,)


def test_session_settings_are_kept_by_the_session(conn: psycopg.Connection) -> None:
    conn.execute("set application_name = 'grafana'")
    conn.execute("SET extra_float_digits = 3")
    conn.execute("set search_path to public, wanka")
    assert conn.info.parameter_status("application_name") == "grafana"
    assert conn.execute("show application_name").fetchone() == ("grafana",)
    assert conn.execute("show transaction isolation level").fetchone() == ("serializable",)
    assert conn.execute("show standard_conforming_strings").fetchone() == ("on",)
    assert conn.execute("select current_setting('server_version_num')").fetchone() == ("150000",)
    assert conn.execute("select current_user, current_database()").fetchone() == (
        "admin",
        "wanka",
    )


def test_copy_to_stdout_text_and_csv(conn: psycopg.Connection) -> None:
    with conn.cursor() as cur:
        with cur.copy("copy (select i, t, ok from pg_types_probe order by i) to stdout") as copy:
            text = b"".join(bytes(b) for b in copy)
        assert text == b"1\tgpu001\tt\n2\tit's\tf\n\\N\t\\N\t\\N\n"
        sql = (
            "COPY (select t, i from pg_types_probe order by i) TO STDOUT WITH (FORMAT csv, HEADER)"
        )
        with cur.copy(sql) as copy:
            csv = b"".join(bytes(b) for b in copy)
        assert csv == b"t,i\ngpu001,1\nit's,2\n,\n"
        with cur.copy("copy pg_types_probe to stdout") as copy:
            assert len(b"".join(bytes(b) for b in copy).splitlines()) == 3


def test_cancel_stops_a_running_query(served: Served) -> None:
    with psycopg.connect(served.dsn("reader"), autocommit=True) as c:
        done = threading.Event()

        def keep_cancelling() -> None:  # until the query is seen cancelled: no guessed delay
            while not done.wait(0.05):
                # cancel_safe: libpq's blocking PQcancel would hold the GIL the server needs
                c.cancel_safe()

        canceller = threading.Thread(target=keep_cancelling)
        canceller.start()
        try:
            with pytest.raises(errors.QueryCanceled):
                c.execute("select count(*) from range(10000000000) a, range(1000) b")
        finally:
            done.set()
            canceller.join()
        assert c.execute("select 2").fetchone() == (2,)


def test_statement_timeout_interrupts(conn: psycopg.Connection) -> None:
    conn.execute("set statement_timeout = 300")
    with pytest.raises(errors.QueryCanceled, match="time limit"):
        conn.execute("select count(*) from range(10000000000) a, range(1000) b")
    conn.execute("reset statement_timeout")
    assert conn.execute("select 3").fetchone() == (3,)


def test_no_users_means_local_admin_without_password(
    tmp_path: Path, warehouses: Warehouses
) -> None:
    from service.pgwire import start
    from service.serve.server import Server

    server = Server(str(warehouses.empty(tmp_path / "empty.duckdb", shipped=True)))
    handle = start(server, "127.0.0.1", 0)
    try:
        dsn = f"host=127.0.0.1 port={handle.port} dbname=wanka user=me sslmode=disable"
        with psycopg.connect(dsn, autocommit=True) as c:
            assert c.execute("select current_user").fetchone() == ("me",)
            c.execute("create table made_here (n int)")  # admin
    finally:
        handle.stop()
        server.close()


def test_tls_when_the_server_has_a_certificate(tmp_path: Path, served: Served) -> None:
    import ssl
    import subprocess

    from service.pgwire import start

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    made = subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip("openssl cannot make a test certificate here")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    handle = start(served.server, "127.0.0.1", 0, tls=context)
    try:
        dsn = served.dsn("reader").replace(f"port={served.port}", f"port={handle.port}")
        with psycopg.connect(dsn.replace("sslmode=disable", "sslmode=require")) as c:
            assert c.pgconn.ssl_in_use
            assert c.execute("select 41 + 1").fetchone() == (42,)
    finally:
        handle.stop()


def test_unaliased_columns_are_named_as_postgresql_names_them(conn: psycopg.Connection) -> None:
    cur = conn.execute("select count(*), sum(i) from pg_types_probe")
    assert cur.description is not None
    assert [d.name for d in cur.description] == ["count", "sum"]
    cur = conn.execute("select 1 + 1, i::text, 2::int from pg_types_probe")
    assert cur.description is not None
    assert [d.name for d in cur.description] == ["?column?", "i", "int4"]


def _counted(served: Served, series: str) -> float:
    """The value of one /metrics series of the served process (0 when absent)."""
    for line in served.server.metrics.render().splitlines():
        name, _, value = line.rpartition(" ")
        if name == series:
            return float(value)
    return 0.0


def test_pgwire_queries_are_counted_in_metrics_as_http_ones_are(served: Served) -> None:
    ok = 'wanka_queries_total{face="pgwire",outcome="ok"}'
    failed = 'wanka_query_errors_total{error="UserError",face="pgwire"}'
    before_ok, before_failed = _counted(served, ok), _counted(served, failed)
    with psycopg.connect(served.dsn()) as conn:
        for i in range(3):
            assert conn.execute("SELECT %s::int * 2", [i]).fetchone() == (2 * i,)
        conn.rollback()
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM no_such_table")
    assert _counted(served, ok) - before_ok >= 3
    assert _counted(served, failed) - before_failed == 1
    histogram = 'wanka_query_duration_seconds_count{face="pgwire"}'
    assert _counted(served, histogram) >= 3


def test_a_repeated_select_in_transactions_of_new_connections(served: Served) -> None:
    """Texts that run again are prepared per cursor: a new connection (its cursor maybe taking
    a closed one's place in memory) must never EXECUTE a statement it does not have, and a
    transaction is never where the preparing happens (a failed PREPARE would abort it)."""
    for _ in range(6):
        with psycopg.connect(served.dsn()) as conn:  # not autocommit: psycopg opens a transaction
            for _ in range(3):
                row = conn.execute("SELECT count(*) FROM pg_types_probe").fetchone()
                assert row == (3,)
            conn.rollback()
