"""`SET search_path` / `SET SCHEMA` drive name resolution, as in a real PostgreSQL 15."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.service.pgwire.conftest import Served, side_by_side
from tests.service.pgwire.realpg import RealPostgres

#: statements run in order on both servers; each one's answer must be the same
STEPS = [
    "select current_schema(), current_schemas(false), current_schemas(true)",
    "show search_path",
    'set search_path = "wanka"',
    "show search_path",
    "select current_schema(), current_schemas(false), current_schemas(true)",
    "select count(*) from sp_probe",
    "set schema 'public'",
    "show search_path",
    "select current_schema()",
    "set search_path to nosuch, wanka, public",
    "show search_path",
    "select current_schema(), current_schemas(false)",
    "select count(*) from sp_probe",
    "with sp_probe as (select 1 as x, 2 as y) select * from sp_probe",
    "set search_path = ''",
    "show search_path",
    "select current_schema(), current_schemas(false)",
    'set search_path = "Mixed", "$user"',
    "show search_path",
    "reset search_path",
    "show search_path",
    "select current_schema(), current_schemas(false)",
    "set search_path to default",
    "show search_path",
]


def _answers(conn: psycopg.Connection) -> list[object]:
    answers: list[object] = []
    for sql in STEPS:
        cur = conn.execute(sql)
        answers.append(cur.fetchall() if cur.description else cur.statusmessage)
    return answers


@pytest.fixture(scope="module")
def both(served: Served, real_postgres: RealPostgres) -> Iterator[tuple[psycopg.Connection, ...]]:
    pg_setup = [
        "create schema if not exists wanka",
        "create table if not exists wanka.sp_probe as select 1 as x, 'a'::text as s",
    ]
    wanka_setup = ["create table if not exists wanka.sp_probe as select 1 as x, 'a' as s"]
    with side_by_side(served, real_postgres, pg_setup=pg_setup, wanka_setup=wanka_setup) as pair:
        yield pair


def test_search_path_answers_as_postgresql_does(both: tuple[psycopg.Connection, ...]) -> None:
    pg, wanka = both
    expected, got = _answers(pg), _answers(wanka)
    for sql, want, have in zip(STEPS, expected, got, strict=True):
        assert have == want, sql


def test_a_path_reaches_wanka_tables_and_the_policy_still_refuses_secrets(served: Served) -> None:
    with psycopg.connect(served.dsn("reader"), autocommit=True) as conn:
        conn.execute("set search_path = wanka, public")
        names = conn.execute("select name from dynamic_tables").fetchall()
        assert isinstance(names, list)
        plan = conn.execute("explain select name from dynamic_tables").fetchall()
        assert "dynamic_tables" in plan[0][0] or any("dynamic_tables" in r[0] for r in plan)
        assert conn.execute("select count(*) from pg_types_probe").fetchone() == (3,)
        # the catalog does not show the secret tables, so the path does not find them...
        with pytest.raises(psycopg.errors.UndefinedTable, match="users"):
            conn.execute("select salt from users")
        with pytest.raises(psycopg.errors.UndefinedTable, match="tokens"):
            conn.execute("select * from (select * from tokens) t")
        # ...and named outright they are refused
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="users"):
            conn.execute("select salt from wanka.users")
        # a name the path does not hold resolves nowhere, as before
        conn.execute("set search_path = public")
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("select name from dynamic_tables")


def test_the_path_holds_for_prepared_statements_and_same_batch_sets(served: Served) -> None:
    with psycopg.connect(served.dsn("reader"), autocommit=True) as conn:
        conn.execute("set search_path = wanka")
        for _ in range(3):  # psycopg prepares a statement run this often
            row = conn.execute("select count(*) from dynamic_tables where %s", [True]).fetchone()
            assert row is not None
    with psycopg.connect(served.dsn("reader"), autocommit=True) as conn:
        conn.execute("set search_path = wanka; select 1")
        assert conn.execute("select current_schema()").fetchone() == ("wanka",)
        conn.cursor().execute("reset search_path")
        assert conn.execute("select current_schema()").fetchone() == ("public",)
