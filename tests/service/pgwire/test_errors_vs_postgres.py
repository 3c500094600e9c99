"""The same bad statements against a real PostgreSQL 15 and the endpoint: the same error.

BI tools match PostgreSQL's texts, so each failure must come back with PostgreSQL's SQLSTATE,
message, position (in the text the client sent) and hint. Known differences are listed with
their reason, and must stay differences (no stale excuses).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.service.pgwire.conftest import Served
from tests.service.pgwire.realpg import RealPostgres

TABLES = "create table err_t (state text, n int); create table err_u (state text, m int)"

BAD = {
    "undefined column": "select no_such_col from err_t",
    "undefined qualified column": "select err_t.no_such_col from err_t",
    "near miss: hint": "select stat from err_t",
    "near miss in a join: two hints": "select stat from err_t join err_u on true",
    "near miss in WHERE": "select * from err_t where n = 1 and sttae = 'x'",
    "quoted column keeps its case": 'select "NoCol" from err_t',
    "unquoted column folds to lower case": "select NoCol from err_t",
    "undefined table": "select * from nope",
    "undefined qualified table": "select * from main.nope",
    "missing FROM entry": "select x.state from err_t",
    "ambiguous column": "select err_t.state from err_t join err_u on true where state = 'x'",
    "undefined function": "select nofunc(1)",
    "undefined function, literal types": "select nofunc(1.5, true, null, 'x'::text, 3000000000)",
    "undefined function, column argument": "select nofunc(n) from err_t",
    "function without that overload": "select upper(n) from err_t",
    "aggregate without that overload": "select sum(state) from err_t",
    "operator: text + integer": "select state + 1 from err_t",
    "operator: timestamptz + integer": "select now() + 1",
    "prefix operator": "select -state from err_t",
    "LIKE on an integer": "select state from err_t where state like 1",
    "syntax error": "selec 1",
    "syntax error at end of input": "select * from err_t where",
    "syntax error at end of input after an operator": "select 1 +",
    "syntax error at end of input in parentheses": "select (1",
    "syntax error on the last token": "select 1 2",
    "syntax error inside a call": "select sum(n from err_t",
    "division by zero": "select 1 / 0",
    "invalid integer": "select 'abc'::int",
    "invalid date": "select 'abc'::date",
    "invalid integer in a comparison": "select 'a' < 1",
    "integer out of range": "select 99999999999::int",
    "not in GROUP BY": "select n from err_t group by state",
    "WHERE not boolean": "select * from err_t where n",
    "ORDER BY position": "select n from err_t order by 1, 7",
    "GROUP BY position": "select count(*) from err_t group by 5",
    "NOT IN a subquery of another type": "select * from err_t where n not in (select state from "
    "err_t)",
    "= ANY of another type": "select * from err_t where state = any(select n from err_t)",
    "duplicate alias": "select * from err_t t1, err_u t1",
    "INSERT into an undefined column": "insert into err_t (nope) values (1)",
    "UPDATE of an undefined column": "update err_t as x set nope = 1",
    "table already exists": "create table err_t (a int)",
    "column already exists": "alter table err_t add column n int",
    "ALTER of an undefined table": "alter table nope add column x int",
    "DROP of an undefined table": "drop table nope",
    "DROP of an undefined view": "drop view nope",
    "undefined schema": "create table nosch.x (a int)",
}
#: as a reader (wanka's role; in PostgreSQL a role granted SELECT only)
AS_READER = {
    "reader inserts": "insert into err_t values ('a', 1)",
    "reader updates": "update err_t set n = 2",
    "reader deletes": "delete from err_u",
}
#: a failure found in the second statement of a simple query: the position counts from the start
MULTI = {"second statement": "select 1; select nocol from err_t"}

#: what wanka still answers differently, and why
KNOWN = {
    "undefined function, column argument": "the argument types are not in the text: wanka says "
    "'function nofunc does not exist' rather than guess them",
    "WHERE not boolean": "DuckDB casts an integer WHERE to boolean and runs the query",
    "undefined schema": "wanka's policy refuses any schema outside its own before DuckDB "
    "looks: 'permission denied for schema nosch' (42501), not 3F000",
}


def _error(conn: psycopg.Connection[Any], sql: str, *, prepare: bool) -> tuple[Any, ...] | None:
    """(sqlstate, message, position, hint) of the error `sql` raises (None: it ran)."""
    try:
        conn.execute(sql, prepare=prepare)
    except psycopg.Error as error:
        diag = error.diag
        return diag.sqlstate, diag.message_primary, diag.statement_position, diag.message_hint
    return None


Pair = tuple[psycopg.Connection[Any], psycopg.Connection[Any]]


@pytest.fixture(scope="module")
def both(served: Served, real_postgres: RealPostgres) -> Iterator[Pair]:
    with (
        psycopg.connect(real_postgres.dsn(), autocommit=True) as pg,
        psycopg.connect(served.dsn("admin"), autocommit=True) as wanka,
    ):
        for conn in (pg, wanka):
            conn.execute("drop table if exists err_t; drop table if exists err_u")
            conn.execute(TABLES)
        pg.execute("drop role if exists err_reader; create role err_reader")
        pg.execute("grant select on err_t, err_u to err_reader")
        yield pg, wanka
        wanka.execute("drop table err_t; drop table err_u")


@pytest.fixture(scope="module")
def readers(both: Pair, served: Served, real_postgres: RealPostgres) -> Iterator[Pair]:
    with (
        psycopg.connect(real_postgres.dsn(), autocommit=True) as pg,
        psycopg.connect(served.dsn("reader"), autocommit=True) as wanka,
    ):
        pg.execute("set role err_reader")
        yield pg, wanka


@pytest.mark.parametrize("prepare", [False, True], ids=["simple", "extended"])
@pytest.mark.parametrize("name", [n for n in BAD if n not in KNOWN])
def test_same_error_as_postgresql(both: Pair, name: str, prepare: bool) -> None:
    pg, wanka = both
    expected = _error(pg, BAD[name], prepare=prepare)
    assert _error(wanka, BAD[name], prepare=prepare) == expected


@pytest.mark.parametrize("name", list(AS_READER))
def test_refusal_is_permission_denied_as_in_postgresql(readers: Pair, name: str) -> None:
    pg, wanka = readers
    assert _error(wanka, AS_READER[name], prepare=False) == _error(
        pg, AS_READER[name], prepare=False
    )


@pytest.mark.parametrize("name", list(MULTI))
def test_position_counts_from_the_start_of_the_query_string(both: Pair, name: str) -> None:
    pg, wanka = both
    assert _error(wanka, MULTI[name], prepare=False) == _error(pg, MULTI[name], prepare=False)


def test_detail_keeps_duckdbs_text(
    both: Pair,
) -> None:
    with pytest.raises(psycopg.Error) as caught:
        both[1].execute(BAD["operator: text + integer"])
    detail = caught.value.diag.message_detail or ""
    assert detail.startswith("Binder Error: No function matches")
    assert "Candidate functions" not in detail  # the 2,800 characters of overloads


@pytest.mark.parametrize("name", list(KNOWN))
def test_known_differences_are_still_differences(both: Pair, name: str) -> None:
    pg, wanka = both
    assert _error(wanka, BAD[name], prepare=False) != _error(pg, BAD[name], prepare=False)
