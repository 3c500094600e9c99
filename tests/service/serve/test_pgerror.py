"""service.serve.pgerror: DuckDB's and wanka's errors worded as PostgreSQL words them.

The texts below are DuckDB 2.0's, one-lined as `warehouse.errors.sql_error` hands them on;
test_errors_vs_postgres.py checks the results against a real PostgreSQL.
"""

from __future__ import annotations

import pytest

from service.pgwire.errors import SqlError
from service.serve.pgerror import NO_FUNCTION_HINT, NO_OPERATOR_HINT, PgError, pg_error
from service.serve.pgtypes import pg_type
from service.serve.session import QueryTimeout
from warehouse.errors import UserError
from warehouse.security.policy import Refused

PLUS = (
    "Binder Error: No function matches the given name and argument types "
    "'+(VARCHAR, INTEGER_LITERAL)'. You might need to add explicit type casts. "
    'Candidate functions: "+"(x TINYINT, /) -> TINYINT "+"("left" TINYINT, "right" TINYINT, /)'
)

CASES = [
    (
        'Binder Error: Referenced column "nope" not found in FROM clause! Candidate bindings: "n"',
        "select n, nope from t",
        ("42703", 'column "nope" does not exist', 11, None),
    ),
    (
        'Binder Error: Referenced column "stat" not found in FROM clause! '
        'Candidate bindings: "state"',
        "select stat from jobs j",
        (
            "42703",
            'column "stat" does not exist',
            8,
            'Perhaps you meant to reference the column "j.state".',
        ),
    ),
    (
        'Binder Error: Table "t" does not have a column named "x" Candidate bindings: : "n"',
        "select n from t where t.x = 1",
        ("42703", "column t.x does not exist", 23, None),
    ),
    (
        "Binder Error: Ambiguous reference to column name \"a\" (use: 't.a' or 'u.a')",
        "select t.a from t, u where a = 1",
        ("42702", 'column reference "a" is ambiguous', 28, None),
    ),
    (
        'Binder Error: Referenced table "x" not found! Candidate tables: "t"',
        "select x.a from t",
        ("42P01", 'missing FROM-clause entry for table "x"', 8, None),
    ),
    (
        'Catalog Error: Table with name nope does not exist! Did you mean "nodes"?',
        "select * from main.nope",
        ("42P01", 'relation "main.nope" does not exist', 15, None),
    ),
    (
        "Catalog Error: Schema with name nosch does not exist!",
        "create table nosch.x (a int)",
        ("3F000", 'schema "nosch" does not exist', 14, None),
    ),
    (
        'Catalog Error: Scalar Function with name f does not exist! Did you mean "abs"?',
        "select f(1, 'a', 2.5)",
        ("42883", "function f(integer, unknown, numeric) does not exist", 8, NO_FUNCTION_HINT),
    ),
    (
        'Catalog Error: Scalar Function with name f does not exist! Did you mean "abs"?',
        "select f(n) from t",
        ("42883", "function f does not exist", 8, NO_FUNCTION_HINT),
    ),
    (
        "Binder Error: No function matches the given name and argument types "
        "'upper(INTEGER)'. You might need to add explicit type casts.",
        "select upper(n) from t",
        ("42883", "function upper(integer) does not exist", 8, NO_FUNCTION_HINT),
    ),
    (
        PLUS,
        "select n + 1, state + 1 from t",
        ("42883", "operator does not exist: text + integer", 10, NO_OPERATOR_HINT),
    ),
    (
        'Parser Error: syntax error at or near "selec"',
        "selec 1",
        ("42601", 'syntax error at or near "selec"', 1, None),
    ),
    (
        'Parser Error: syntax error at or near "where"',
        "select * from t where",
        ("42601", "syntax error at end of input", 22, None),
    ),
    (
        "Binder Error: ORDER term out of range - should be between 1 and 2",
        "select a, b from t order by 2, 3",
        ("42P10", "ORDER BY position 3 is not in select list", 32, None),
    ),
    (
        'Binder Error: Referenced update column x not found in table! Did you mean: "n"',
        "update main.t set x = 1",
        ("42703", 'column "x" of relation "t" does not exist', 19, None),
    ),
    (
        "Catalog Error: View with name v does not exist!",
        "drop view v",
        ("42P01", 'view "v" does not exist', None, None),
    ),
    (
        "Invalid Input Error: Division by zero in expression (1 // 0).",
        "select 1 / 0",
        ("22012", "division by zero", None, None),
    ),
    (
        "Conversion Error: Could not convert string 'abc' to INT64",
        "select 'abc'::bigint",
        ("22P02", 'invalid input syntax for type bigint: "abc"', 8, None),
    ),
    (
        'Conversion Error: invalid date field format: "x", expected format is (YYYY-MM-DD)',
        "select n from t where d = 'x'",
        ("22007", 'invalid input syntax for type date: "x"', 27, None),
    ),
    (
        "Conversion Error: Type INT64 with value 9999999999 can't be cast because the value is "
        "out of range for the destination type INT32",
        "select 9999999999::int",
        ("22003", "integer out of range", None, None),
    ),
]


def _said(error: PgError) -> tuple[object, ...]:
    return error.code, error.message, error.position, error.hint


@pytest.mark.parametrize(("duckdb_text", "sql", "expected"), CASES)
def test_duckdb_error_worded_as_postgresql(
    duckdb_text: str, sql: str, expected: tuple[object, ...]
) -> None:
    said = pg_error(UserError(duckdb_text), sql)
    assert _said(said) == expected
    assert said.detail is not None and said.detail.split(":")[0] == duckdb_text.split(":")[0]


def test_detail_drops_the_list_of_overloads() -> None:
    assert (
        pg_error(UserError(PLUS), "select state + 1 from t").detail
        == PLUS.split(" Candidate functions:")[0]
    )


def test_position_counts_from_the_start_of_the_whole_text() -> None:
    text = 'Binder Error: Referenced column "b" not found in FROM clause! Candidate bindings: "a"'
    sql = "select b from t0; select a, b from t"
    assert pg_error(UserError(text), sql, start=18).position == 29


def test_unquoted_name_folds_to_lower_case_quoted_keeps_it() -> None:
    text = (
        'Binder Error: Referenced column "NoCol" not found in FROM clause! Candidate bindings: "n"'
    )
    assert (
        pg_error(UserError(text), "select NoCol from t").message == 'column "nocol" does not exist'
    )
    assert (
        pg_error(UserError(text), 'select "NoCol" from t').message
        == 'column "NoCol" does not exist'
    )


def test_no_hint_for_a_far_name() -> None:
    text = (
        'Binder Error: Referenced column "sta" not found in FROM clause! '
        'Candidate bindings: "state"'
    )
    assert pg_error(UserError(text), "select sta from t").hint is None


def test_name_missing_from_the_text_has_no_position() -> None:
    """A name only the rewritten SQL holds (or text that does not tokenize): no position."""
    text = 'Binder Error: Referenced column "x" not found in FROM clause! Candidate bindings: "n"'
    assert pg_error(UserError(text), "select y from t").position is None
    assert pg_error(UserError(text), "select 'x from t").position is None


def test_refusals_are_permission_denied_with_the_policys_words_as_detail() -> None:
    table = pg_error(Refused("a reader may only run SELECT: INSERT is refused", on=("table", "t")))
    assert (table.code, table.message) == ("42501", "permission denied for table t")
    assert table.detail == "a reader may only run SELECT: INSERT is refused"
    other = pg_error(Refused("a reader may run one statement at a time: this text holds 2"))
    assert (
        other.message
        == "permission denied: a reader may run one statement at a time: this text holds 2"
    )


def test_unmapped_errors_keep_their_text_and_sqlstate() -> None:
    assert pg_error(QueryTimeout("the query ran past its time limit of 1 s")) == PgError(
        "57014", "the query ran past its time limit of 1 s"
    )
    assert pg_error(SqlError("26000", 'prepared statement "p" does not exist')) == PgError(
        "26000", 'prepared statement "p" does not exist'
    )
    catalog = "Catalog Error: Type with name nope does not exist!"
    assert pg_error(UserError(catalog), "select 1::nope") == PgError("42704", catalog)


def test_fields_and_json_carry_only_what_is_known() -> None:
    said = PgError("42703", 'column "x" does not exist', detail="Binder Error: ...", position=8)
    assert said.fields() == {"detail": "Binder Error: ...", "position": "8"}
    assert said.as_json() == {
        "error": 'column "x" does not exist',
        "sqlstate": "42703",
        "position": 8,
        "detail": "Binder Error: ...",
    }
    assert PgError("57014", "cancelled").as_json() == {"error": "cancelled", "sqlstate": "57014"}


@pytest.mark.parametrize(
    ("duckdb_type", "pg"),
    [
        ("INTEGER_LITERAL", "integer"),
        ("VARCHAR", "text"),
        ("TIMESTAMP WITH TIME ZONE", "timestamp with time zone"),
        ("DOUBLE", "double precision"),
        ("DECIMAL(18,3)", "numeric"),
        ("BIGINT[]", "bigint[]"),
        ("STRUCT(a INTEGER)", "struct"),
    ],
)
def test_pg_type(duckdb_type: str, pg: str) -> None:
    assert pg_type(duckdb_type) == pg
