"""An error as PostgreSQL words it: SQLSTATE, message, detail, hint and position.

BI tools (Superset, Metabase, DBeaver) recognise PostgreSQL's texts: `column "x" does not
exist`, `operator does not exist: text + integer`. `pg_error` turns what a query raised (DuckDB's
text, once `warehouse.errors.one_line` made it one line, or wanka's own refusals) and the SQL the
client sent into that shape; both faces send it (pgwire as ErrorResponse fields, HTTP as JSON).
DuckDB's text stays as the detail. The position is found again in the client's own text
(`sqlspots`), since wanka runs a rewritten one. Unmapped errors keep their text and the
SQLSTATE of `sqlstates`.

The rules were written from PostgreSQL 15's observed answers (tests/service/pgwire/
test_errors_vs_postgres.py runs the same statements on both).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from service.serve import pgerror_rules as say
from service.serve.pgerror_rules import (
    NO_FUNCTION_HINT,
    NO_OPERATOR_HINT,
    NO_UNARY_OPERATOR_HINT,
    PgError,
)
from service.serve.sqlspots import Spots
from service.serve.sqlstates import sqlstate
from warehouse.errors import one_line
from warehouse.security.policy import Refused


def pg_error(error: BaseException, sql: str = "", start: int = 0) -> PgError:
    """PostgreSQL's wording of `error`, raised by the statement at `start` within `sql`.

    >>> pg_error(ValueError('Binder Error: Referenced column "x" not found in FROM clause! '
    ...     'Candidate bindings: "n"'), "select x from t").message
    'column "x" does not exist'
    >>> pg_error(ValueError("Invalid Input Error: Division by zero in expression (1 // 0)."))
    PgError(code='22012', message='division by zero', detail='Invalid Input Error: Division by zero in expression (1 // 0).', hint=None, position=None)
    """  # noqa: E501
    text = " ".join(one_line(str(error)).split()) or type(error).__name__
    if isinstance(error, Refused):  # warehouse.security.policy's words kept as the detail
        if error.on:  # PostgreSQL's words, the policy's sentence beside them
            return PgError("42501", "permission denied for {} {}".format(*error.on), detail=text)
        return PgError("42501", f"permission denied: {text}")
    spots = Spots(sql, start)
    for pattern, rule in _RULES:
        match = pattern.search(text)
        if match is not None and (found := rule(match, spots)) is not None:
            return replace(found, detail=found.detail or _without_candidates(text))
    return PgError(sqlstate(error), text)


def _without_candidates(text: str) -> str:
    """DuckDB's text less its list of every overload (2,000 characters for `+`)."""
    return text.split(" Candidate functions:", 1)[0]


Rule = Callable[[re.Match[str], Spots], PgError | None]


_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern), rule)
    for pattern, rule in (
        (
            r'^Binder Error: Referenced column "(?P<name>[^"]+)" not found in FROM clause!'
            r"(?: Candidate bindings: (?P<candidates>.*))?",
            say.column,
        ),
        (
            r'^Binder Error: Table "(?P<table>[^"]+)" does not have a column named '
            r'"(?P<name>[^"]+)"',
            say.qualified_column,
        ),
        (r'^Binder Error: Ambiguous reference to column name "(?P<name>[^"]+)"', say.ambiguous),
        (r'^Binder Error: Referenced table "(?P<table>[^"]+)" not found!', say.missing_from),
        (
            r'^Binder Error: column "(?P<name>[^"]+)" must appear in the GROUP BY clause',
            say.group_by,
        ),
        (
            r"^Binder Error: (?:No function matches the given name and argument types "
            r"'|Could not choose a best candidate function for the function call \")"
            r"(?P<name>[^(]+)\((?P<args>.*?)\)['\"]",
            say.no_match,
        ),
        (
            r'^Binder Error: Table "(?P<table>[^"]+)" does not have a column with name '
            r'"(?P<name>[^"]+)"',
            say.target_column,
        ),
        (
            r"^Binder Error: Referenced update column (?P<name>\S+) not found in table!",
            say.target_column,
        ),
        (
            r'^Binder Error: Ambiguous reference to table "(?P<name>[^"]+)" \(duplicate',
            say.duplicate_alias,
        ),
        (
            r"^Binder Error: (?P<clause>ORDER|GROUP BY) term out of range - should be between "
            r"1 and (?P<count>\d+)",
            say.term,
        ),
        (
            r"^Binder Error: Cannot compare values of type (?P<left>.+?) and (?P<right>.+?) "
            r"in IN/ANY/ALL clause",
            say.membership,
        ),
        (
            r"^Catalog Error: (?P<kind>Table|View) with name (?P<name>\S+) does not exist",
            say.relation,
        ),
        (
            r'^Catalog Error: (?P<kind>Table|View|Schema|Column) with name "(?P<name>[^"]+)" '
            r"already exists",
            say.exists,
        ),
        (r"^Catalog Error: Schema with name (?P<name>\S+) does not exist", say.schema),
        (
            r"^Catalog Error: Scalar Function with name (?P<name>\w+) does not exist",
            say.unknown_function,
        ),
        (r"^Parser Error: syntax error at end of input", say.syntax_end),
        (r'^Parser Error: syntax error at or near "(?P<near>[^"]*)"', say.syntax),
        (r"^(?:Invalid Input|Out of Range) Error: Division by zero", say.division),
        (
            r"^Conversion Error: Could not convert string ['\"](?P<value>.*?)['\"] to "
            r"(?P<type>[A-Z0-9_]+)",
            say.invalid_input,
        ),
        (
            r"^Conversion Error: invalid (?P<type>date|timestamp|time) field format: "
            r'"(?P<value>.*?)"',
            say.invalid_input,
        ),
        (
            r"^Conversion Error: Type \S+ with value \S+ can't be cast because the value is out "
            r"of range for the destination type (?P<type>\w+)",
            say.out_of_range,
        ),
    )
)


__all__ = ["NO_FUNCTION_HINT", "NO_OPERATOR_HINT", "NO_UNARY_OPERATOR_HINT", "PgError", "pg_error"]
