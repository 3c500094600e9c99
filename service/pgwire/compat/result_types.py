"""Result types as PostgreSQL gives them where DuckDB's differ: sum, avg and numeric division.

PostgreSQL's `sum(integer)` is bigint (DuckDB: a 128-bit integer, sent as numeric), `avg` of
integers or numerics is numeric (DuckDB: double), and dividing a numeric by a number is numeric
(DuckDB: double). BI tools format columns by their wire type, so these are cast in the
outermost select list to PostgreSQL's type. Which argument types an expression has comes from
the warehouse's catalog (sqlglot's type annotation over the column types DuckDB reports); where
a type is not known the expression is left to DuckDB.

The numeric is DECIMAL(38, 16): PostgreSQL prints avg(1, 2) as 1.5000000000000000 too. DuckDB
computes these in double precision, so digits past the 16th significant one may differ from
PostgreSQL's exact arithmetic; the cast adds none and loses none of DuckDB's.
"""

from __future__ import annotations

from typing import Any, cast

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema, Schema

from warehouse.query import describe

_SMALL_INTEGERS = {exp.DType.TINYINT, exp.DType.SMALLINT, exp.DType.INT}
_INTEGERS = _SMALL_INTEGERS | {exp.DType.BIGINT}
_NUMERIC = exp.DataType.build("DECIMAL(38, 16)")
_BIGINT = exp.DataType.build("BIGINT")
#: integer digits DECIMAL(38, 16) holds
_ROOM = 38 - 16
_KEY = "wanka_item"


def wanted(tree: exp.Expr) -> bool:
    """Whether typing could change the statement (cheap: no catalog, no typing)."""
    select = _select(tree)
    if select is None:
        return False
    return tree.find(exp.Div, exp.Sum, exp.Avg, exp.Round) is not None


def columns(cur: Any) -> Schema:
    """The warehouse's column types by schema and table, for `retyped`."""
    found: dict[str, dict[str, dict[str, str]]] = {}
    for (schema, table), listed in describe.columns(cur).items():
        found.setdefault(schema, {})[table] = {c["name"]: c["type"] for c in listed}
    return MappingSchema(cast(dict[str, object], found), dialect="duckdb")


def retyped(tree: exp.Expr, known: Schema) -> exp.Expr | None:
    """`tree` with PostgreSQL's arithmetic and result types, or None where nothing changes (or
    the statement cannot be typed): a division of integers divides as integers and a sum of
    int2/int4 is bigint wherever they are; the outermost averages and numeric divisions are
    cast to numeric."""
    select = _select(tree)
    if select is None:
        return None
    outer = [t for t in (_target(item) for item in select.expressions) if t is not None]
    marked = list(dict.fromkeys([*tree.find_all(exp.Div, exp.Sum), *outer]))  # each node once
    for i, node in enumerate(marked):
        node.meta[_KEY] = i
    try:
        types = _argument_types(tree, known)
        changes: dict[int, exp.DataType | None] = {}
        for i, node in enumerate(marked):
            args = types.get(i, [])
            if isinstance(node, exp.Div) and len(args) == 2 and all(_integer(t) for t in args):
                changes[i] = None  # integer division
            elif isinstance(node, exp.Sum) or any(node is t for t in outer):
                cast = _pg_type(node, args)  # a sum wherever it is: DuckDB's is 128 bits wide
                if cast is not None:
                    changes[i] = cast
        return _changed(tree, changes) if changes else None
    finally:
        for node in marked:
            node.meta.pop(_KEY, None)


def _changed(tree: exp.Expr, changes: dict[int, exp.DataType | None]) -> exp.Expr:
    """A copy of `tree` with its marked nodes changed: None divides as integers, a type casts."""
    new = tree.copy()
    nodes = [n for n in new.walk() if n.meta.get(_KEY) in changes]
    for node in nodes:
        to = changes[node.meta.pop(_KEY)]
        if to is None:
            assert isinstance(node, exp.Div)
            node.replace(exp.IntDiv(this=node.this, expression=node.expression))
        else:
            node.replace(exp.Cast(this=node.copy(), to=to.copy()))
    for node in new.walk():
        node.meta.pop(_KEY, None)
    return new


def _integer(kind: exp.DataType | None) -> bool:
    return kind is not None and kind.this in _INTEGERS


def _select(tree: exp.Expr) -> exp.Select | None:
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


def _target(item: exp.Expr) -> exp.Expr | None:
    """The avg/division/round an output column is (under its alias or parentheses)."""
    node = item.this if isinstance(item, exp.Alias) else item
    while isinstance(node, exp.Paren):
        node = node.this
    return node if isinstance(node, (exp.Avg, exp.Div, exp.Round)) else None


def _argument_types(tree: exp.Expr, known: Schema) -> dict[int, list[exp.DataType | None]]:
    """Each marked node's argument types, from a typed copy of the statement."""
    try:
        typed = annotate_types(
            qualify(
                tree.copy(),
                schema=known,
                db="main",
                dialect="duckdb",
                validate_qualify_columns=False,
                expand_stars=False,
                identify=False,
            ),
            schema=known,
            dialect="duckdb",
        )
    except (SqlglotError, KeyError, ValueError, TypeError, AttributeError):
        return {}
    found: dict[int, list[exp.DataType | None]] = {}
    for node in typed.walk():
        if _KEY in node.meta:
            found[node.meta[_KEY]] = [_type(arg) for arg in _arguments(node)]
    return found


def _arguments(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.Div):
        return [node.this, node.expression]
    return [node.this]


def _type(node: exp.Expr) -> exp.DataType | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal) and node.is_number and _decimal_literal(node.this):
        return exp.DataType.build("DECIMAL")  # PostgreSQL reads 2.5 as numeric
    if isinstance(node, (exp.Sum, exp.Avg)):  # PostgreSQL's types, which sqlglot's differ from
        inner = _type(node.this)
        if inner is None:
            return None
        if isinstance(node, exp.Sum) and inner.this in _SMALL_INTEGERS:
            return _BIGINT
        if inner.this in _INTEGERS or inner.this == exp.DType.DECIMAL:
            return exp.DataType.build("DECIMAL(38, 0)" if isinstance(node, exp.Sum) else "DECIMAL")
        return inner
    kind = node.type
    return kind if isinstance(kind, exp.DataType) and kind.this != exp.DType.UNKNOWN else None


def _decimal_literal(text: str) -> bool:
    return "." in text and "e" not in text.lower()


def _pg_type(node: exp.Expr, types: list[exp.DataType | None]) -> exp.DataType | None:
    """The cast that gives `node` PostgreSQL's type, or None where DuckDB's already agrees."""
    if not types or any(t is None for t in types):
        return None
    kinds = [t.this for t in types if t is not None]
    if isinstance(node, exp.Sum):
        return _BIGINT if kinds[0] in _SMALL_INTEGERS else None
    if isinstance(node, exp.Avg):
        exact = kinds[0] in _INTEGERS or _fits(types[0])
        return _NUMERIC if exact else None
    if isinstance(node, exp.Round):  # round(numeric, n) keeps n decimals
        places = node.args.get("decimals")
        if not (_fits(types[0]) and isinstance(places, exp.Literal) and places.is_int):
            return None
        return exp.DataType.build(f"DECIMAL(38, {places.name})") if int(places.name) <= 16 else None
    decimal = [t for t in types if t is not None and t.this == exp.DType.DECIMAL]
    others_exact = all(k in _INTEGERS or k == exp.DType.DECIMAL for k in kinds)
    if decimal and others_exact and all(_fits(t) for t in decimal):
        return _NUMERIC
    return None


def _fits(kind: exp.DataType | None) -> bool:
    """A DECIMAL whose integer digits DECIMAL(38, 16) holds (DuckDB's default is (18, 3))."""
    if kind is None or kind.this != exp.DType.DECIMAL:
        return False
    sizes = [
        int(p.this.name)
        for p in kind.expressions
        if isinstance(p, exp.DataTypeParam) and isinstance(p.this, exp.Literal) and p.this.is_int
    ]
    precision = sizes[0] if sizes else 18
    scale = sizes[1] if len(sizes) > 1 else (0 if sizes else 3)
    return precision - scale <= _ROOM
