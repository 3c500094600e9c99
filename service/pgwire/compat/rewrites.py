"""Tree rewrites from what PostgreSQL clients send to what DuckDB runs.

Each rule is a small function over one node, applied in one `transform` pass:

- catalog relations wanka provides (`pg_catalog.pg_class`, `information_schema.columns`, ...)
  become inlined subqueries; schema `public` is the warehouse's `main`;
- `pg_catalog.`-qualified calls lose the qualifier; functions wanka provides call the macros in
  `memory.pg_compat`; `version()`, `current_setting()` and friends become literals;
- casts to `regclass`, `regtype`, `oid`, `name`, `"char"`, ... become lookups or plain types;
- `OPERATOR(pg_catalog.~)` and `COLLATE pg_catalog.default` become plain DuckDB.
"""

from __future__ import annotations

from sqlglot import exp

from service.pgwire.compat import casts
from service.pgwire.compat.objects import macro_names, view
from service.pgwire.settings import DEFAULTS, SERVER_VERSION

VERSION = (
    f"PostgreSQL {SERVER_VERSION} (wanka, DuckDB inside) on x86_64-pc-linux-gnu, "
    "compiled by gcc, 64-bit"
)
#: markers the connection replaces per session (user name, backend pid, schema, search path)
SESSION_USER = "wanka_session_user"
CURRENT_SCHEMA = "wanka_current_schema"
SEARCH_PATH = "wanka_search_path"

_LITERAL_FUNCTIONS = {
    "version": VERSION,
    "current_database": "wanka",
    "current_catalog": "wanka",
    "pg_postmaster_start_time": None,
    "inet_server_addr": None,
}
_RENAMED = {
    "json_build_object": "json_object",
    "jsonb_build_object": "json_object",
    "json_build_array": "json_array",
    "jsonb_build_array": "json_array",
    "json_agg": "json_group_array",
    "jsonb_agg": "json_group_array",
}


def rewrite(tree: exp.Expr) -> exp.Expr:
    """Rewrite one parsed statement, children before parents (a copy is returned)."""
    root = tree.copy()
    for node in reversed(list(root.walk(bfs=True))):
        new = _rule(node)
        if new is not node:
            if node is root:
                root = new
            else:
                node.replace(new)
    return root


def _rule(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Length):  # int4 in PostgreSQL, bigint in DuckDB
        return exp.Cast(this=node.copy(), to=exp.DataType.build("INT"))
    if isinstance(node, exp.Table):
        return _table(node)
    if isinstance(node, exp.Dot) and not isinstance(node.expression, exp.Identifier):
        return _qualified_call(node)
    if isinstance(node, exp.Cast):
        return casts.cast(node)
    if isinstance(node, exp.Column) and node.args.get("db") is not None:
        return _qualified_column(node)
    if isinstance(node, exp.DataType) and node.this == exp.DType.USERDEFINED:
        return casts.qualified_type(node)
    if isinstance(node, exp.Operator):
        return _operator(node)
    if isinstance(node, exp.Collate):
        collated: exp.Expr = node.this
        return collated
    if isinstance(node, exp.Div) and _integral(node.this) and _integral(node.expression):
        return exp.IntDiv(this=node.this, expression=node.expression)
    if isinstance(node, exp.Func):
        return _function(node)
    if (
        isinstance(node, exp.Column)
        and not node.table
        and node.name.lower() in ("current_user", "session_user", "user", "current_role")
        and not node.this.quoted
    ):
        return _session_user()
    return node


def _qualified_column(node: exp.Column) -> exp.Expr:
    """`pg_catalog.pg_class.relname` names the inlined relation by its bare name."""
    schema = node.text("db").lower()
    if schema in ("pg_catalog", "information_schema") and view(schema, node.table) is not None:
        node.set("db", None)
    elif schema == "public":
        node.set("db", exp.to_identifier("main"))
    return node


_INTEGER_TYPES = {exp.DType.INT, exp.DType.BIGINT, exp.DType.SMALLINT, exp.DType.TINYINT}


def _integral(node: exp.Expr) -> bool:
    """Whether an operand is an integer by its syntax (PostgreSQL divides those exactly)."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    if isinstance(node, exp.Literal):
        return not node.is_string and node.this.lstrip("-").isdigit()
    if isinstance(node, exp.Cast):
        return node.to.this in _INTEGER_TYPES
    if isinstance(node, (exp.IntDiv, exp.Mod)):
        return True
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        return _integral(node.this) and _integral(node.expression)
    return False


def _session_user() -> exp.Expr:
    return _marker(SESSION_USER)


def _table(node: exp.Table) -> exp.Expr:
    if isinstance(node.this, (exp.Func, exp.Dot)):
        if node.db.lower() in ("pg_catalog", "information_schema"):
            node.set("db", None)  # pg_catalog.unnest(...), information_schema._pg_expandarray
        return _from_function(node)
    return _relation(node)


#: functions PostgreSQL lets FROM treat as one-row relations (DuckDB's table functions differ)
_TABLE_FUNCTIONS = {"generate_series", "unnest", "range", "json_each", "json_tree"}


def _from_function(node: exp.Table) -> exp.Expr:
    """`FROM pg_get_keywords()` -> the inlined view; `FROM string_to_array(...) s` -> one row."""
    func = node.this
    if isinstance(func, exp.Anonymous):
        name = func.name.lower()
    else:
        name = func.sql_name().lower() if isinstance(func, exp.Func) else ""
    alias = node.args.get("alias")
    if name and view("", name) is not None:
        inlined = view("", name)
        assert inlined is not None
        return exp.Subquery(
            this=inlined, alias=alias or exp.TableAlias(this=exp.to_identifier(name))
        )
    if name and name not in _TABLE_FUNCTIONS and isinstance(alias, exp.TableAlias):
        column = alias.columns[0] if alias.columns else alias.this
        one_row = exp.select(exp.alias_(func.copy(), column.copy() if column else "value"))
        return exp.Subquery(this=one_row, alias=exp.TableAlias(this=alias.this.copy()))
    return node


def _relation(node: exp.Table) -> exp.Expr:
    if node.catalog:
        return node
    schema = node.db.lower()
    if schema == "public":
        node.set("db", exp.to_identifier("main"))
        return node
    if schema in ("", "pg_catalog", "information_schema"):
        inlined = view(schema, node.name)
        if inlined is not None:
            alias = node.alias or node.name
            return exp.Subquery(this=inlined, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    return node


def _qualified_call(node: exp.Dot) -> exp.Expr:
    qualifier = node.this.name.lower() if isinstance(node.this, exp.Identifier) else ""
    if qualifier in ("pg_catalog", "information_schema"):
        inner: exp.Expr = node.expression  # already rewritten: children go first
        return inner
    return node


def _session_value(node: exp.Func) -> exp.Expr | None:
    """What the functions sqlglot knows by class (current_user, version(), ...) answer."""
    if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
        return _session_user()
    if isinstance(node, exp.CurrentVersion):
        return exp.Literal.string(VERSION)
    if isinstance(node, exp.CurrentDatabase):
        return exp.Literal.string("wanka")
    if isinstance(node, exp.CurrentTimestamp) and not node.this:
        # DuckDB binds `CURRENT_TIMESTAMP AS "current_timestamp"` to the alias itself
        return exp.Anonymous(this="get_current_timestamp", expressions=[])
    if isinstance(node, exp.CurrentSchema):
        return _marker(CURRENT_SCHEMA)
    if isinstance(node, exp.CurrentSchemas):
        return casts.compat_call("current_schemas", [node.this, _marker(SEARCH_PATH)])
    return None


def _marker(name: str) -> exp.Expr:
    return exp.Parameter(this=exp.Var(this=name))


def _function(node: exp.Func) -> exp.Expr:
    known = _session_value(node)
    if known is not None:
        return known
    name = node.name.lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()
    args = (
        list(node.expressions) if isinstance(node, exp.Anonymous) else list(node.iter_expressions())
    )
    if name in _LITERAL_FUNCTIONS:
        value = _LITERAL_FUNCTIONS[name]
        return exp.Literal.string(value) if value is not None else exp.null()
    if name == "current_setting" and args and isinstance(args[0], exp.Literal):
        setting = DEFAULTS.get(args[0].name) or DEFAULTS.get(args[0].name.lower())
        return exp.Literal.string(setting) if setting is not None else exp.null()
    if name == "set_config" and len(args) >= 2:
        return args[1]
    if name == "current_schema" and isinstance(node, exp.Anonymous):
        return _marker(CURRENT_SCHEMA)
    if name == "current_schemas" and isinstance(node, exp.Anonymous) and len(args) == 1:
        return casts.compat_call(name, [args[0], _marker(SEARCH_PATH)])
    if name == "pg_backend_pid":
        return exp.Parameter(this=exp.Var(this="wanka_backend_pid"))
    if name in _RENAMED and isinstance(node, exp.Anonymous):
        return exp.Anonymous(this=_RENAMED[name], expressions=args)
    if isinstance(node, exp.Anonymous) and name in macro_names():
        return casts.compat_call(name, args)
    if name in ("array_upper", "array_lower", "array_ndims") and isinstance(node, exp.Anonymous):
        return casts.compat_call(name, args)
    return node


def _operator(node: exp.Operator) -> exp.Expr:
    op = str(node.args.get("operator", "")).replace(" ", "").lower()
    op = op.removeprefix("pg_catalog.")
    left, right = node.this, node.expression
    if op == "~":
        return exp.RegexpLike(this=left, expression=right)
    if op == "!~":
        return exp.Not(this=exp.RegexpLike(this=left, expression=right))
    if op == "~*":
        return exp.RegexpILike(this=left, expression=right)
    binary = {"=": exp.EQ, "<>": exp.NEQ, "<": exp.LT, ">": exp.GT, "<=": exp.LTE, ">=": exp.GTE}
    if op in binary:
        return binary[op](this=left, expression=right)
    return node
