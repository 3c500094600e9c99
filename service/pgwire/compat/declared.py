"""Result columns whose PostgreSQL type DuckDB has no type for: `name`, `"char"` and `json`.

PostgreSQL's catalogs hold names as `name` (type 19) and one-letter codes (`relkind`, `contype`)
as `"char"` (18); DuckDB has only VARCHAR, which the wire sends as text (25). Clients that look
at a column's type (pgjdbc's metadata, psycopg's loaders) see what PostgreSQL sends only if the
wire labels those columns, and only the statement knows which they are: a column of a catalog
relation (declared in views.sql by `-- name:`, `-- "char":` and `-- varchar:` lines), a cast
to `name` or `"char"`, or a function PostgreSQL types `name` (`current_schema()`,
`pg_get_userbyid()`) or `json` (`json_build_object()`: DuckDB's JSON reaches Arrow as a
plain string).

Only the outermost select list is looked at, before the compatibility rewrites inline the
catalog relations; anything else keeps the type its Arrow column gives.
"""

from __future__ import annotations

from sqlglot import exp

from service.pgwire import types as t
from service.pgwire.compat.objects import declared_columns, view

#: functions whose result PostgreSQL types `name`
_NAME_FUNCTIONS = {
    "current_schema",
    "current_database",
    "current_user",
    "session_user",
    "pg_get_userbyid",
    "pg_encoding_to_char",
}
#: functions whose result PostgreSQL types json (DuckDB's JSON reaches Arrow as a string)
_JSON_FUNCTIONS = {"json_build_object", "json_build_array", "to_json", "row_to_json"}
_SESSION_WORDS = {"current_user", "session_user", "user", "current_role"}


def declared_types(tree: exp.Expr) -> tuple[int, ...]:
    """Per output column, the declared PostgreSQL type OID, or 0 where the Arrow type decides.

    Empty where no column is declared.

    >>> import sqlglot
    >>> declared_types(sqlglot.parse_one(
    ...     "select c.relname, c.relkind, c.relnatts, n.nspname::text, 'x'::name "
    ...     "from pg_catalog.pg_class c join pg_namespace n on n.oid = c.relnamespace",
    ...     read="postgres"))
    (19, 18, 0, 0, 19)
    """
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return ()
    sources = _sources(select)
    found: list[int] = []
    for item in select.expressions:
        if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            source = sources.get(item.table.lower()) if item.table else None
            expanded = [oid for _, oid in source] if source is not None else None
        elif isinstance(item, exp.Star):
            only = list(sources.values())
            expanded = [oid for _, oid in only[0]] if len(only) == 1 else None
        else:
            expanded = [_declared(item.unalias(), sources)]
        if expanded is None:
            return ()  # a star over a relation whose columns are not known here
        found.extend(expanded)
    return tuple(found) if any(found) else ()


#: a relation's columns in order, each with its declared type OID (0: none)
Columns = list[tuple[str, int]]


def _sources(select: exp.Select) -> dict[str, Columns]:
    """The select's FROM and JOIN relations by alias: catalog relations wanka provides and
    derived tables (whose columns are declared the same way, recursively)."""
    tables = [select.args.get("from_"), *(select.args.get("joins") or [])]
    found: dict[str, Columns] = {}
    for source in tables:
        relation = source.this if source is not None else None
        if isinstance(relation, exp.Subquery) and relation.alias:
            inner = relation.this
            types = declared_types(inner) or (0,) * len(inner.named_selects)
            if len(types) == len(inner.named_selects):
                found[relation.alias.lower()] = list(zip(inner.named_selects, types, strict=True))
        elif isinstance(relation, exp.Table) and isinstance(relation.this, exp.Identifier):
            columns = _catalog_columns(relation)
            if columns is not None:
                found[relation.alias_or_name.lower()] = columns
    return found


def _catalog_columns(table: exp.Table) -> Columns | None:
    schema = table.db.lower()
    if table.catalog or schema not in ("", "pg_catalog", "information_schema"):
        return None
    relation = view(schema, table.name)
    if relation is None:
        return None
    key = table.name.lower()
    declared = declared_columns().get(f"{schema}.{key}" if schema == "information_schema" else key)
    return [(name, (declared or {}).get(name, 0)) for name in relation.named_selects]


def _declared(node: exp.Expr, sources: dict[str, Columns]) -> int:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Cast):
        return _cast_type(node.to)
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier):
        if not node.table and not node.this.quoted and node.name.lower() in _SESSION_WORDS:
            return t.NAME
        return _column_type(node, sources)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
        return _declared(node.expression, sources)  # pg_catalog.pg_get_userbyid(...)
    if isinstance(node, exp.Nullif):  # the type of its first argument
        return _declared(node.this, sources)
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        inner = declared_types(node.this)  # (SELECT collname FROM pg_collation ...)
        return inner[0] if inner else 0
    if isinstance(node, exp.Case):  # every branch of one declared type (NULL goes with any)
        branches = [i.args.get("true") for i in node.args.get("ifs") or []]
        branches.append(node.args.get("default"))
        types = {
            _declared(b, sources) for b in branches if not isinstance(b, (exp.Null, type(None)))
        }
        return types.pop() if len(types) == 1 else 0
    return _function_type(node) if isinstance(node, exp.Func) else 0


def _function_type(node: exp.Func) -> int:
    if isinstance(node, (exp.CurrentUser, exp.SessionUser, exp.CurrentSchema)):
        return t.NAME
    if isinstance(node, exp.JSONArrayAgg):
        return t.JSON
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    return t.NAME if name in _NAME_FUNCTIONS else t.JSON if name in _JSON_FUNCTIONS else 0


def _cast_type(to: exp.DataType) -> int:
    if to.this == exp.DType.NAME:
        return t.NAME
    kind = to.args.get("kind")
    if to.this == exp.DType.USERDEFINED and kind is not None:
        name = kind.sql().replace('"', "").lower().removeprefix("pg_catalog.")
        return {"char": t.CHAR, "name": t.NAME}.get(name, 0)
    return 0


def _column_type(node: exp.Column, sources: dict[str, Columns]) -> int:
    name = node.name.lower()
    candidates = [sources.get(node.table.lower(), [])] if node.table else list(sources.values())
    types = {oid for columns in candidates for column, oid in columns if column.lower() == name}
    return types.pop() if len(types) == 1 else 0
