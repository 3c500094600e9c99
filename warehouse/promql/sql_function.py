"""PromQL inside SQL: the table functions `promql_range(expr, start, end, step)` and
`promql_query(expr, time)`, each giving rows `(ts TIMESTAMPTZ, labels MAP(VARCHAR, VARCHAR),
value DOUBLE)`, one per series and evaluation step.

DuckDB cannot call a Python table function from SQL, so a call is expanded in the text before
DuckDB parses it: the call becomes a subquery holding the expression's translation
(`evaluate.range_query`), which the policy then checks like any other SQL. The arguments are
constants evaluated once, at expansion: the expression a string literal, the times timestamps,
Unix seconds or RFC 3339 strings (`now() - INTERVAL 6 HOUR` too), the step an INTERVAL, seconds
or a PromQL duration ('1m'). Anything else in an argument (a column, a subquery, a parameter) is
refused before it runs. A dynamic table that reads one is expanded afresh at each refresh.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from warehouse.errors import UserError
from warehouse.promql import evaluate, times
from warehouse.promql.plan import PromQLError

NAMES = ("promql_range", "promql_query")

#: What a time or step argument may be made of: literals, casts, intervals, arithmetic and the
#: clock; nothing that reads a table, a column or a parameter.
_CONSTANT_NODES: tuple[type[exp.Expr], ...] = (
    exp.Literal,
    exp.Null,
    exp.Interval,
    exp.Var,
    exp.Cast,
    exp.TryCast,
    exp.DataType,
    exp.DataTypeParam,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Neg,
    exp.Paren,
    exp.CurrentTimestamp,
    exp.CurrentDate,
    exp.UnixToTime,
    exp.TimestampTrunc,
    exp.DateTrunc,
    exp.TimestampFromParts,
)
_CONSTANT_CALLS = frozenset({"now", "get_current_timestamp", "epoch_ms", "to_timestamp"})


def mentions(sql: str) -> bool:
    """Whether `sql` may call one of these functions (a cheap test before tokenizing)."""
    lowered = sql.lower()
    return any(name in lowered for name in NAMES)


def calls(sql: str) -> bool:
    """Whether `sql` calls promql_range or promql_query."""
    if not mentions(sql):
        return False
    try:
        tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    except SqlglotError:
        return False
    return any(_is_call(tokens, i) for i in range(len(tokens)))


def expand(cur: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`sql` with every promql_range / promql_query call replaced by its subquery."""
    if not mentions(sql):
        return sql
    try:
        tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    except SqlglotError:
        return sql  # DuckDB will say what is wrong with it
    out: list[str] = []
    done = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if _is_call(tokens, i):
            close, args = _arguments(sql, tokens, i + 1)
            out.append(sql[done : token.start])
            out.append(_subquery(cur, token.text.lower(), args))
            if not _has_alias(tokens, close + 1):
                out.append(f" AS {token.text.lower()}")
            done = tokens[close].end + 1
            i = close + 1
            continue
        i += 1
    out.append(sql[done:])
    return "".join(out)


def _is_call(tokens: list[Token], i: int) -> bool:
    return (
        tokens[i].text.lower() in NAMES
        and tokens[i].token_type != TokenType.STRING
        and i + 1 < len(tokens)
        and tokens[i + 1].token_type == TokenType.L_PAREN
        and not (i > 0 and tokens[i - 1].token_type == TokenType.DOT)
    )


def _has_alias(tokens: list[Token], i: int) -> bool:
    if i >= len(tokens):
        return False
    token = tokens[i]
    return token.token_type in (TokenType.ALIAS, TokenType.VAR, TokenType.IDENTIFIER)


def _arguments(sql: str, tokens: list[Token], open_at: int) -> tuple[int, list[str]]:
    """The index of the closing parenthesis and the text of each top-level argument."""
    depth, args, begin = 0, [], open_at + 1
    for j in range(open_at, len(tokens)):
        kind = tokens[j].token_type
        if kind in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE):
            depth += 1
        elif kind in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE):
            depth -= 1
            if depth == 0:
                if begin < j:
                    args.append(sql[tokens[begin].start : tokens[j - 1].end + 1])
                return j, args
        elif kind == TokenType.COMMA and depth == 1:
            args.append(sql[tokens[begin].start : tokens[j - 1].end + 1] if begin < j else "")
            begin = j + 1
    raise UserError(f"{tokens[open_at - 1].text}( is not closed")


def _subquery(cur: duckdb.DuckDBPyConnection, name: str, args: list[str]) -> str:
    want = 4 if name == "promql_range" else 2
    if len(args) != want:
        usage = "(expr, start, end, step)" if want == 4 else "(expr, time)"
        raise UserError(f"{name}{usage} takes {want} arguments, {len(args)} given")
    expression = _expression(name, args[0])
    try:
        if name == "promql_range":
            start, end = _time_ms(cur, name, "start", args[1]), _time_ms(cur, name, "end", args[2])
            return rows_sql(expression, start, end, _step_ms(cur, name, args[3]))
        at = _time_ms(cur, name, "time", args[1])
        return rows_sql(expression, at, at, 1000)
    except PromQLError as error:
        raise UserError(f"{name}: {error}") from None


def rows_sql(expression: str, start_ms: int, end_ms: int, step_ms: int) -> str:
    """The subquery of one call: (ts, labels, value) per series and step."""
    compiled = evaluate.range_query(expression, start_ms, end_ms, step_ms)
    ts = f"timezone('UTC', epoch_ms(CAST({start_ms} + u.k * {step_ms} AS BIGINT)))"
    return (
        f"(SELECT {ts} AS ts, CAST(u.labels::JSON AS MAP(VARCHAR, VARCHAR)) AS labels, "
        f"u.v AS value\n"
        f"FROM (SELECT labels, unnest(ks) AS k, unnest(vs) AS v FROM (\n{compiled.sql}\n)) u)"
    )


def _expression(name: str, arg: str) -> str:
    tree = _constant(name, "expr", arg)
    if not (isinstance(tree, exp.Literal) and tree.is_string):
        raise UserError(f"{name}: expr must be a string literal, got {arg.strip()}")
    return str(tree.this)


def _constant(name: str, what: str, arg: str) -> exp.Expr:
    """The argument's tree, refused unless it is built of constants only."""
    try:
        tree = sqlglot.parse_one(arg, read="duckdb")
    except SqlglotError:
        raise UserError(f"{name}: cannot read the {what} argument {arg.strip()!r}") from None
    for node in tree.walk():
        if isinstance(node, exp.Anonymous) and node.name.lower() in _CONSTANT_CALLS:
            continue
        if not isinstance(node, _CONSTANT_NODES):
            raise UserError(
                f"{name}: the {what} argument must be a constant (a literal, a timestamp, "
                f"now() +/- an INTERVAL), not {arg.strip()}"
            )
    return tree


def _value(cur: duckdb.DuckDBPyConnection, name: str, what: str, arg: str) -> tuple[str, Any]:
    """(DuckDB type, value) of a constant argument."""
    tree = _constant(name, what, arg)
    text = tree.sql("duckdb")
    try:
        row = cur.execute(f"SELECT typeof(({text})), ({text})").fetchone()
    except duckdb.Error as error:
        raise UserError(f"{name}: the {what} argument {arg.strip()}: {error}") from None
    assert row is not None
    return str(row[0]), row[1]


def _time_ms(cur: duckdb.DuckDBPyConnection, name: str, what: str, arg: str) -> int:
    kind, value = _value(cur, name, what, arg)
    if value is None:
        raise UserError(f"{name}: {what} is NULL")
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)  # no zone: UTC, as stored
        return round(moment.timestamp() * 1000)
    if not isinstance(value, int | float | Decimal | str):
        raise UserError(f"{name}: {what} must be a timestamp or Unix seconds, not {kind}")
    found = times.seconds(str(value))
    if found is None:
        raise UserError(f"{name}: cannot read {what} {value!r} as a time")
    return round(found * 1000)


def _step_ms(cur: duckdb.DuckDBPyConnection, name: str, arg: str) -> int:
    _, value = _value(cur, name, "step", arg)
    if isinstance(value, timedelta):  # an INTERVAL
        return round(value.total_seconds() * 1000)
    found = (
        times.duration_ms(str(value)) if isinstance(value, int | float | Decimal | str) else None
    )
    if found is None:
        raise UserError(
            f"{name}: cannot read step {value!r} as a duration: give an INTERVAL, seconds or "
            "a duration like '1m'"
        )
    return found
