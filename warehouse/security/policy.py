"""Which statements a role may run, decided on parse trees, never on regexes.

Three views of the same text decide together:

1. DuckDB's own statement split and types (`extract_statements`): what DuckDB will run.
2. DuckDB's own parse tree of a SELECT (`json_serialize_sql`): every table, table function and
   function call DuckDB will bind, including SHOW/DESCRIBE/SUMMARIZE and data-modifying CTEs.
3. sqlglot's tree (dialect duckdb) for DML and DDL, which DuckDB does not serialise: the target
   table, every table read and every function called.

Anything that cannot be checked is refused. The server also runs DuckDB with external access off
and configuration locked, so a hole here still cannot read a file or change a setting.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from warehouse.errors import UserError
from warehouse.query import one_line
from warehouse.security.users import check_role

READ = frozenset({"SELECT", "EXPLAIN", "TRANSACTION"})
WRITE = READ | {"INSERT", "UPDATE", "DELETE", "MERGE_INTO"}
ADMIN = WRITE | {"CREATE", "DROP", "ALTER", "CALL", "VACUUM", "PREPARE", "EXECUTE"}
ALLOWED_TYPES = {"reader": READ, "writer": WRITE, "admin": ADMIN}
WHAT_ROLE_MAY = {
    "reader": "read-only statements (SELECT, WITH, EXPLAIN, SHOW, DESCRIBE)",
    "writer": "read-only statements and INSERT/UPDATE/DELETE/MERGE on base tables",
    "admin": "queries, DML and DDL (no COPY, ATTACH, INSTALL/LOAD, SET, PRAGMA, EXPORT, secrets)",
}

#: Table functions that read only the database itself or make rows from their arguments.
#: Every other table function (read_csv, read_text, glob, query, json_execute_serialized_sql,
#: duckdb_secrets, ...) is refused.
SAFE_TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "json_each",
        "json_tree",
        "duckdb_tables",
        "duckdb_columns",
        "duckdb_views",
        "duckdb_schemas",
        "duckdb_functions",
        "duckdb_types",
        "duckdb_constraints",
        "duckdb_indexes",
        "duckdb_keywords",
        "duckdb_sequences",
        "duckdb_dependencies",
        "pragma_table_info",
        "pragma_show",
        "pragma_version",
    }
)
#: Scalar functions with effects (advancing a sequence, reseeding) or that reveal the host.
DENIED_FUNCTIONS = frozenset({"nextval", "setval", "setseed", "getenv"})
#: Schemas user SQL may name; `wanka.users` and `wanka.tokens` are never readable by SQL.
ALLOWED_SCHEMAS = frozenset({"", "main", "wanka", "information_schema", "pg_catalog"})
ALLOWED_CATALOGS = frozenset({"", "warehouse"})
SECRET_TABLES = frozenset({("wanka", "users"), ("wanka", "tokens")})
_FILE_CHARS = frozenset("./\\:*?")
_DML_NODES = ("INSERT", "UPDATE", "DELETE", "MERGE")


class Refused(UserError):
    """A statement the caller's role may not run; the message says what was refused."""


#: Texts a reader was allowed to run, most recent last: dashboards send the same SQL again and
#: again, and a reader's decision depends on the text alone (the functions, tables and schemas
#: it names), so the parse is done once. Refusals are not kept: they are rare and cheap enough.
_READER_ALLOWED: OrderedDict[str, None] = OrderedDict()
_READER_ALLOWED_MAX = 4096
_READER_LOCK = threading.Lock()


def authorize(cur: duckdb.DuckDBPyConnection, sql: str, role: str) -> None:
    """Raise Refused unless every statement of `sql` is allowed for `role`; run nothing.

    A reader may run exactly one read-only statement. Bad SQL raises UserError.
    """
    if role == "reader":
        with _READER_LOCK:
            if sql in _READER_ALLOWED:
                _READER_ALLOWED.move_to_end(sql)
                return
        _authorize(cur, sql, role)
        with _READER_LOCK:
            _READER_ALLOWED[sql] = None
            if len(_READER_ALLOWED) > _READER_ALLOWED_MAX:
                _READER_ALLOWED.popitem(last=False)
        return
    _authorize(cur, sql, role)


def _authorize(cur: duckdb.DuckDBPyConnection, sql: str, role: str) -> None:
    from warehouse.dynamic import statements as dynamic  # imports warehouse.query

    check_role(role)
    script = dynamic.split(sql)
    if script is not None:
        if role == "reader":
            verb = next(s.verb for s in script if s.verb)
            raise Refused(f"a reader may only run {WHAT_ROLE_MAY['reader']}: {verb} DYNAMIC TABLE")
        for part in script:
            if part.verb is None:
                _authorize(cur, part.text, role)
            elif part.verb != "REFRESH" and role != "admin":
                raise Refused(f"only an admin may {part.verb} a DYNAMIC TABLE")
        return
    statements = _statements(cur, sql)
    if role == "reader" and len(statements) > 1:
        raise Refused(
            f"a reader may run one statement at a time: this text holds {len(statements)}"
        )
    for statement in statements:
        _authorize_one(cur, statement, role)


def last_statement_type(cur: duckdb.DuckDBPyConnection, sql: str) -> str:
    """The type of the last statement of `sql` ('SELECT', 'INSERT', 'REFRESH DYNAMIC TABLE')."""
    from warehouse.dynamic import statements as dynamic

    script = dynamic.split(sql)
    if script is not None:
        last = script[-1]
        if last.verb:
            return f"{last.verb} DYNAMIC TABLE"
        sql = last.text
    return statement_type(_statements(cur, sql)[-1])


def _statements(cur: duckdb.DuckDBPyConnection, sql: str) -> list[Any]:
    try:
        found = cur.extract_statements(sql)
    except duckdb.Error as error:
        raise UserError(one_line(str(error))) from None
    except ValueError as error:  # a statement type the Python enum does not know
        raise Refused(f"statement of an unknown type refused ({error})") from None
    if not found:
        raise UserError("no SQL statement given")
    return list(found)


def statement_type(statement: Any) -> str:
    """DuckDB's name for a statement's type: 'SELECT', 'COPY', 'MERGE_INTO', ..."""
    return str(statement.type).rsplit(".", 1)[-1]


def _refuse(role: str, what: str) -> Refused:
    article = "an" if role == "admin" else "a"
    return Refused(f"{article} {role} may only run {WHAT_ROLE_MAY[role]}: {what} is refused")


def _authorize_one(cur: duckdb.DuckDBPyConnection, statement: Any, role: str) -> None:
    kind = statement_type(statement)
    if kind == "EXPLAIN":
        inner = _statements(cur, explained(statement.query))
        if len(inner) != 1:
            raise Refused("EXPLAIN takes one statement")
        if statement_type(inner[0]) not in READ - {"TRANSACTION", "EXPLAIN"}:
            # EXPLAIN ANALYZE runs its statement: it is as dangerous as what it explains
            what = f"EXPLAIN of {statement_type(inner[0])}"
            if role != "admin":
                raise _refuse(role, what)
        _authorize_one(cur, inner[0], role)
        return
    if kind not in ALLOWED_TYPES[role]:
        raise _refuse(role, kind)
    if kind == "SELECT":
        check_select_tree(cur, statement.query, role)
    elif kind != "TRANSACTION":
        check_sqlglot_tree(cur, statement.query, kind, role)


def explained(sql: str) -> str:
    """The statement an EXPLAIN [ANALYZE] [(options)] explains, found with DuckDB's tokenizer.

    >>> explained("EXPLAIN (FORMAT json) ANALYZE /* x */ copy t to 'f'")
    "copy t to 'f'"
    """
    tokens = duckdb.tokenize(sql)
    i, depth, seen_explain = 0, 0, False
    while i < len(tokens):
        start, kind = tokens[i]
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
        word = sql[start:end].strip().lower()
        if kind == duckdb.token_type.comment:
            pass
        elif not seen_explain:
            seen_explain = word == "explain"
        elif word == "(":
            depth += 1
        elif word == ")":
            depth -= 1
        elif depth == 0 and word != "analyze":
            return sql[start:]
        i += 1
    return ""


# -- SELECT: DuckDB's own tree -------------------------------------------------------------


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def check_select_tree(cur: duckdb.DuckDBPyConnection, sql: str, role: str) -> None:
    """Walk DuckDB's parse tree of one SELECT-type statement."""
    try:
        raw = cur.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchall()[0][0]
        tree = json.loads(raw)
    except duckdb.InterruptException:
        raise  # the caller was cancelled while checking: not a verdict on the SQL
    except (duckdb.Error, ValueError) as error:
        raise Refused(f"could not check this statement, so it is refused ({error})") from None
    if tree.get("error"):
        raise Refused(
            f"could not check this statement, so it is refused ({tree.get('error_message')})"
        )
    for node in _nodes(tree):
        kind = node.get("type")
        if not isinstance(kind, str):
            continue
        if kind.endswith("_QUERY_NODE") and kind.startswith(_DML_NODES) and role != "admin":
            raise _refuse(role, f"a data-modifying WITH ({kind.removesuffix('_QUERY_NODE')})")
        if kind == "TABLE_FUNCTION":
            _check_table_function(str(node["function"].get("function_name", "")))
        elif node.get("class") == "FUNCTION":
            _check_function(str(node.get("function_name", "")))
        elif kind == "BASE_TABLE":
            _check_table(
                str(node.get("catalog_name", "")),
                str(node.get("schema_name", "")),
                str(node.get("table_name", "")),
            )


def _check_table_function(name: str) -> None:
    if name.lower() not in SAFE_TABLE_FUNCTIONS:
        raise Refused(f"table function {name}() is refused: user SQL reads only the database")


def _check_function(name: str) -> None:
    if name.lower() in DENIED_FUNCTIONS:
        raise Refused(f"function {name}() is refused")


def _check_table(catalog: str, schema: str, table: str) -> None:
    catalog, schema, table = catalog.lower(), schema.lower(), table.lower()
    if set(table) & _FILE_CHARS:
        raise Refused(f"reading the file {table!r} is refused: user SQL reads only the database")
    if catalog not in ALLOWED_CATALOGS:
        raise Refused(f"database {catalog} is refused: only {'/'.join(ALLOWED_CATALOGS - {''})}")
    if schema not in ALLOWED_SCHEMAS:
        raise Refused(f"schema {schema} is refused")
    if (schema, table) in SECRET_TABLES:
        raise Refused(f"{schema}.{table} is refused: manage users with `wanka user`")


# -- DML and DDL: sqlglot's tree -----------------------------------------------------------


def check_sqlglot_tree(cur: duckdb.DuckDBPyConnection, sql: str, kind: str, role: str) -> None:
    """Check a non-SELECT statement: its target (writers: base tables only) and what it reads."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except SqlglotError as error:
        raise Refused(f"could not check this {kind} statement, so it is refused: {error}") from None
    if isinstance(tree, exp.Command):
        if "SECRET" in _leading_words(sql, 6):
            raise Refused(f"{kind} SECRET is refused: secrets are never managed through SQL")
        if role == "admin" and kind in {"CALL", "VACUUM", "PREPARE", "EXECUTE", "CREATE"}:
            return  # forms sqlglot does not model (CHECKPOINT, CREATE MACRO, ...)
        raise Refused(f"could not check this {kind} statement, so it is refused")
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Func):
            _check_table_function(_function_name(table.this))
        else:
            _check_table(table.catalog, table.db, table.name)
    for func in tree.find_all(exp.Func):
        _check_function(_function_name(func))
        if _function_name(func).lower() in _file_functions(cur):
            _check_table_function(_function_name(func))
    if role == "writer":
        _check_write_target(cur, tree, kind)


def _leading_words(sql: str, count: int) -> list[str]:
    """The first `count` words of `sql` upper-cased, comments skipped (DuckDB's tokenizer)."""
    tokens = duckdb.tokenize(sql)
    words: list[str] = []
    for i, (start, kind) in enumerate(tokens):
        if kind != duckdb.token_type.comment:
            end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
            words.append(sql[start:end].strip().upper())
        if len(words) == count:
            break
    return words


def _function_name(func: exp.Func) -> str:
    return (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()


def _file_functions(cur: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """DuckDB's table functions, which sqlglot may show as plain calls (cached per process)."""
    global _TABLE_FUNCTIONS
    if _TABLE_FUNCTIONS is None:
        rows = cur.execute(
            "SELECT DISTINCT lower(function_name) FROM duckdb_functions() "
            "WHERE function_type = 'table'"
        ).fetchall()
        _TABLE_FUNCTIONS = frozenset(r[0] for r in rows) - SAFE_TABLE_FUNCTIONS
    return _TABLE_FUNCTIONS


_TABLE_FUNCTIONS: frozenset[str] | None = None


def _check_write_target(cur: duckdb.DuckDBPyConnection, tree: exp.Expr, kind: str) -> None:
    from warehouse.dynamic import catalog as dynamic_catalog

    target = tree.this
    if isinstance(target, exp.Schema):
        target = target.this
    if not isinstance(target, exp.Table):
        raise Refused(f"a writer may {kind} only a base table")
    if target.db.lower() not in {"", "main"}:
        raise Refused(f"a writer may not {kind} {target.db}.{target.name}: base tables only")
    if target.name.lower() in dynamic_catalog.names(cur):
        raise Refused(
            f"{target.name} is a dynamic table: its rows come from its query, not from {kind}"
        )
