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


#: bare words PostgreSQL reads as functions of the session, named after themselves
_SESSION_COLUMNS = {"current_user", "session_user", "user", "current_role"}

#: functions sqlglot reads without noting where their name was written
_WRITTEN_AS = {
    exp.GroupConcat: "string_agg",
    exp.Extract: "extract",
    exp.StrPosition: "position",
    exp.Trim: "btrim",
    exp.ArrayAgg: "array_agg",
}


def pg_column_name(node: exp.Expr, text: str = "") -> str | None:
    """The name PostgreSQL gives an unaliased select item; None where DuckDB's name agrees.

    >>> import sqlglot
    >>> [pg_column_name(e) for e in sqlglot.parse_one(
    ...     "select count(*), 1 + 1, x, y::text, 2::int, sum(x), case when x then 1 end",
    ...     read="postgres").selects]
    ['count', '?column?', None, 'y', 'int4', 'sum', 'case']

    With the statement's text, a function is named as it was written (sqlglot reads
    `date_trunc` as TIMESTAMP_TRUNC and `now()` as CURRENT_TIMESTAMP):

    >>> sql = "select date_trunc('hour', ts), now(), substr(s, 1), string_agg(s, ',')"
    >>> [pg_column_name(e, sql) for e in sqlglot.parse_one(sql, read="postgres").selects]
    ['date_trunc', 'now', 'substr', 'string_agg']
    """
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.Dot, exp.Column, exp.Subquery)):
        return _reference_name(node, text)
    if isinstance(node, (exp.Alias, exp.Star)):
        return None
    if isinstance(node, exp.Cast):
        inner = node.this
        if isinstance(inner, exp.Column):
            return inner.name
        named = pg_column_name(inner, text)
        if named not in (None, "?column?"):
            return named
        return _TYPE_NAMES.get(node.to.this, node.to.sql(dialect="postgres").lower())
    if isinstance(node, exp.Case):  # PostgreSQL names it after its ELSE, where that has a name
        default = node.args.get("default")
        named = _named(default, text) if default is not None else None
        return named or "case"
    if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
        return "current_user" if isinstance(node, exp.CurrentUser) else "session_user"
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.Func) and not isinstance(node, (exp.Binary, exp.Unary)):
        return _written(node, text) or node.sql_name().lower()
    return "?column?"


def _reference_name(node: exp.Dot | exp.Column | exp.Subquery, text: str) -> str | None:
    """A qualified call's, a session word's or a scalar subquery's name; None for a column."""
    if isinstance(node, exp.Dot):  # pg_catalog.format_type(...) is format_type
        call = node.expression
        return pg_column_name(call, text) if isinstance(call, exp.Func) else None
    if isinstance(node, exp.Column):  # session_user becomes a literal: DuckDB would say 'alice'
        word = node.this
        bare = not node.table and isinstance(word, exp.Identifier) and not word.quoted
        return node.name.lower() if bare and node.name.lower() in _SESSION_COLUMNS else None
    if not isinstance(node.this, exp.Select) or not node.this.selects:
        return "?column?"
    inner = node.this.selects[0]  # (SELECT x FROM ...) is named after x
    if isinstance(inner, exp.Alias):
        return inner.alias if inner.args["alias"].quoted else inner.alias.lower()
    return (inner.name or None) if isinstance(inner, exp.Column) else _named(inner, text)


def _named(node: exp.Expr | None, text: str) -> str | None:
    """The name an expression gives a column, where it has one of its own (not a type's)."""
    while isinstance(node, exp.Paren):
        node = node.this
    while isinstance(node, exp.Cast):
        node = node.this
    if node is None or isinstance(node, (exp.Literal, exp.Null)):
        return None
    if isinstance(node, exp.Column):
        return node.name
    name = pg_column_name(node, text)
    return None if name in ("?column?", "case") else name


def _written(node: exp.Func, text: str) -> str | None:
    """The function's name as the client wrote it, where sqlglot noted the place."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if text and isinstance(start, int) and isinstance(end, int) and 0 <= start <= end < len(text):
        written = text[start : end + 1]
        if written.replace("_", "").isalnum():
            return written.lower()
    for cls, name in _WRITTEN_AS.items():
        if isinstance(node, cls):
            return name
    return None


def name_columns(tree: exp.Expr, text: str = "") -> exp.Expr:
    """Alias the outermost SELECT's unaliased expressions as PostgreSQL would name them.

    `text` is the statement the tree was parsed from (for functions' written names)."""
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return tree
    named: list[exp.Expr] = []
    for item in select.expressions:
        if isinstance(item, exp.Alias) and not item.args["alias"].quoted:
            item.set("alias", exp.to_identifier(item.alias.lower()))  # AS TABLE_SCHEM: table_schem
            named.append(item)
            continue
        column = item.this if isinstance(item, exp.Column) and item.table else None
        folded = isinstance(column, exp.Identifier) and not column.quoted
        if folded and item.name != item.name.lower():
            # `result.TABLE_CAT` names the column table_cat (DuckDB would keep the case); not a
            # bare `NoCol`: DuckDB would read a missing one as the alias, a worse error
            named.append(exp.alias_(item, item.name.lower(), quoted=True))
            continue
        name = pg_column_name(item, text)
        same = (  # DuckDB reads `CURRENT_DATE AS "current_date"` as a column of itself
            name is not None
            and item.sql(dialect="duckdb").lower() == name
            and not isinstance(item, (exp.CurrentUser, exp.SessionUser, exp.CurrentTimestamp))
        )
        named.append(exp.alias_(item, name, quoted=True) if name and not same else item)
    select.set("expressions", named)
    return tree
