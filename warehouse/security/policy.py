"""Which statements a role may run, decided on parse trees, never on regexes.

`warehouse.parsing.script` parses a text once into statements that carry DuckDB's statement type and
what each reads, calls and writes (DuckDB's own tree for SELECT-type statements, sqlglot's for
DML and DDL: `warehouse.parsing.reads`). The decisions are here: which types a role may run, which
table functions and schemas user SQL may touch, and that a writer writes only base tables.

Anything that cannot be checked is refused. The server also runs DuckDB with external access off
and configuration locked, so a hole here still cannot read a file or change a setting.
"""

from __future__ import annotations

import duckdb

from warehouse.ai import grants as ai_grants
from warehouse.dynamic import catalog as dynamic_catalog
from warehouse.errors import UserError
from warehouse.parsing.reads import Reads
from warehouse.parsing.script import Script, Statement, parse
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
#: Statements sqlglot does not model that an admin may still run (CHECKPOINT, CREATE MACRO, ...)
ADMIN_COMMANDS = frozenset({"CALL", "VACUUM", "PREPARE", "EXECUTE", "CREATE"})
_FILE_CHARS = frozenset("./\\:*?")


class Refused(UserError):
    """A statement the caller's role may not run; the message says what was refused.

    `on`: what was refused, when it is one thing: ("table", name), ("schema", name) or
    ("function", name) (PostgreSQL's clients are told `permission denied for table <name>`).
    """

    def __init__(self, message: str, *, on: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.on = on


def authorize(cur: duckdb.DuckDBPyConnection, sql: str | Script, role: str) -> Script:
    """Raise Refused unless every statement of `sql` is allowed for `role`; run nothing.

    A reader may run exactly one read-only statement. Bad SQL raises UserError. Returns the
    parsed script (parsed here when given as text).
    """
    check_role(role)
    script = sql if isinstance(sql, Script) else parse(cur, sql)
    if role == "reader" and len(script.statements) > 1:
        dynamic = next((s for s in script.statements if s.dynamic is not None), None)
        if dynamic is not None:
            raise Refused(f"a reader may only run {WHAT_ROLE_MAY['reader']}: {dynamic.type}")
        raise Refused(
            f"a reader may run one statement at a time: this text holds {len(script.statements)}"
        )
    for statement in script.statements:
        _authorize_one(cur, statement, role)
    return script


def _refuse(role: str, what: str) -> Refused:
    article = "an" if role == "admin" else "a"
    return Refused(f"{article} {role} may only run {WHAT_ROLE_MAY[role]}: {what} is refused")


def _authorize_one(cur: duckdb.DuckDBPyConnection, statement: Statement, role: str) -> None:
    kind, reads = statement.type, statement.reads
    if statement.dynamic is not None:
        _authorize_dynamic(statement.dynamic.verb, kind, role)
        return
    if kind == "UNKNOWN":
        raise Refused(reads.unchecked or "statement of an unknown type refused")
    if kind == "EXPLAIN":
        _authorize_one(cur, _explained(statement, role), role)
        return
    if kind not in ALLOWED_TYPES[role]:
        refused = _refuse(role, kind)
        if kind in WRITE and reads.target is not None:
            refused.on = ("table", reads.target[1])
        raise refused
    if kind == "TRANSACTION":
        return
    if reads.unchecked:
        raise Refused(reads.unchecked)
    if reads.modifying_cte and role != "admin":
        raise _refuse(role, f"a data-modifying WITH ({reads.modifying_cte})")
    if reads.command_words:
        _authorize_command(kind, reads.command_words, role)
        return
    _check_reads(cur, reads)
    _check_ai_models(cur, reads, role)
    if role == "writer" and kind != "SELECT":
        _check_write_target(cur, reads, kind)


def _authorize_dynamic(verb: str, kind: str, role: str) -> None:
    """Writers may refresh a dynamic table; only admins create, alter or drop one."""
    if role == "reader":
        raise Refused(f"a reader may only run {WHAT_ROLE_MAY['reader']}: {kind}")
    if verb != "REFRESH" and role != "admin":
        raise Refused(f"only an admin may {verb} a DYNAMIC TABLE")


def _explained(statement: Statement, role: str) -> Statement:
    """The statement an EXPLAIN explains, which is then checked in its place."""
    inner = statement.explained
    if inner is None:
        raise Refused(statement.reads.unchecked or "EXPLAIN takes one statement")
    if inner.type not in READ - {"TRANSACTION", "EXPLAIN"} and role != "admin":
        # EXPLAIN ANALYZE runs its statement: it is as dangerous as what it explains
        raise _refuse(role, f"EXPLAIN of {inner.type}")
    return inner


def _authorize_command(kind: str, words: tuple[str, ...], role: str) -> None:
    """A statement sqlglot does not model: only an admin's known forms, never secrets."""
    if "SECRET" in words:
        raise Refused(f"{kind} SECRET is refused: secrets are never managed through SQL")
    if role != "admin" or kind not in ADMIN_COMMANDS:
        raise Refused(f"could not check this {kind} statement, so it is refused")


def _check_reads(cur: duckdb.DuckDBPyConnection, reads: Reads) -> None:
    for catalog, schema, table in reads.tables:
        _check_table(catalog, schema, table)
    for name in reads.table_functions:
        _check_table_function(name)
    for name in reads.functions:
        _check_function(name)
        if reads.calls_may_be_table_functions and name.lower() in _file_functions(cur):
            _check_table_function(name)


def _check_ai_models(cur: duckdb.DuckDBPyConnection, reads: Reads, role: str) -> None:
    """The AI functions' bodies are never called directly; a reader names granted models."""
    internal = ai_grants.internal_call(reads.functions)
    if internal:
        raise Refused(internal, on=("function", internal.split("(")[0]))
    refused = ai_grants.refusal(cur, role, reads.call_arguments)
    if refused:
        raise Refused(refused)


def _check_table_function(name: str) -> None:
    if name.lower() not in SAFE_TABLE_FUNCTIONS:
        raise Refused(f"table function {name}() is refused: user SQL reads only the database")


def _check_function(name: str) -> None:
    if name.lower() in DENIED_FUNCTIONS:
        raise Refused(f"function {name}() is refused", on=("function", name))


def _check_table(catalog: str, schema: str, table: str) -> None:
    catalog, schema, table = catalog.lower(), schema.lower(), table.lower()
    if set(table) & _FILE_CHARS:
        raise Refused(f"reading the file {table!r} is refused: user SQL reads only the database")
    if catalog not in ALLOWED_CATALOGS:
        raise Refused(f"database {catalog} is refused: only {'/'.join(ALLOWED_CATALOGS - {''})}")
    if schema not in ALLOWED_SCHEMAS:
        raise Refused(f"schema {schema} is refused", on=("schema", schema))
    if (schema, table) in SECRET_TABLES:
        raise Refused(
            f"{schema}.{table} is refused: manage users with `wanka user`", on=("table", table)
        )


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


def _check_write_target(cur: duckdb.DuckDBPyConnection, reads: Reads, kind: str) -> None:
    if reads.target is None:
        raise Refused(f"a writer may {kind} only a base table")
    schema, name = reads.target
    if schema.lower() not in {"", "main"}:
        raise Refused(
            f"a writer may not {kind} {schema}.{name}: base tables only", on=("table", name)
        )
    if name.lower() in dynamic_catalog.names(cur):
        raise Refused(
            f"{name} is a dynamic table: its rows come from its query, not from {kind}",
            on=("table", name),
        )
