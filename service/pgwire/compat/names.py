"""Result column names as PostgreSQL chooses them for unaliased expressions.

DuckDB names `count(*)` 'count_star()' and `1 + 1` '(1 + 1)'; PostgreSQL says 'count' and
'?column?', and dashboards refer to columns by those names. Applied to the outermost SELECT only,
before the compatibility rewrites change the functions.
"""

from __future__ import annotations

from sqlglot import exp

_TYPE_NAMES = {
    exp.DType.INT: "int4",
    exp.DType.BIGINT: "int8",
    exp.DType.SMALLINT: "int2",
    exp.DType.DOUBLE: "float8",
    exp.DType.FLOAT: "float4",
    exp.DType.BOOLEAN: "bool",
    exp.DType.DECIMAL: "numeric",
    exp.DType.TEXT: "text",
    exp.DType.VARCHAR: "varchar",
    exp.DType.DATE: "date",
    exp.DType.TIMESTAMP: "timestamp",
    exp.DType.TIMESTAMPTZ: "timestamptz",
    exp.DType.INTERVAL: "interval",
    exp.DType.JSON: "json",
    exp.DType.UUID: "uuid",
}


def pg_column_name(node: exp.Expr) -> str | None:
    """The name PostgreSQL gives an unaliased select item; None where DuckDB's name agrees.

    >>> import sqlglot
    >>> [pg_column_name(e) for e in sqlglot.parse_one(
    ...     "select count(*), 1 + 1, x, y::text, 2::int, sum(x), case when x then 1 end",
    ...     read="postgres").selects]
    ['count', '?column?', None, 'y', 'int4', 'sum', 'case']
    """
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.Column, exp.Alias, exp.Star, exp.Dot)):
        return None
    if isinstance(node, exp.Cast):
        inner = node.this
        if isinstance(inner, exp.Column):
            return inner.name
        named = pg_column_name(inner)
        if named not in (None, "?column?"):
            return named
        return _TYPE_NAMES.get(node.to.this, node.to.sql(dialect="postgres").lower())
    if isinstance(node, exp.Case):
        return "case"
    if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
        return "current_user" if isinstance(node, exp.CurrentUser) else "session_user"
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.Func) and not isinstance(node, (exp.Binary, exp.Unary)):
        return node.sql_name().lower()
    return "?column?"


def name_columns(tree: exp.Expr) -> exp.Expr:
    """Alias the outermost SELECT's unaliased expressions as PostgreSQL would name them."""
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return tree
    named = []
    for item in select.expressions:
        name = pg_column_name(item)
        same = name is not None and item.sql(dialect="duckdb").lower() == name  # CURRENT_DATE
        named.append(exp.alias_(item, name, quoted=True) if name and not same else item)
    select.set("expressions", named)
    return tree
