"""What one statement reads, calls and writes, taken from a parse tree (never from its text).

Two trees, one record:

- a SELECT-type statement (SELECT, SHOW, DESCRIBE, SUMMARIZE, FROM-first, data-modifying WITH) is
  serialised by DuckDB itself (`json_serialize_sql`): every table, table function and function
  call DuckDB will bind;
- DML and DDL, which DuckDB does not serialise, are parsed by sqlglot (dialect duckdb): the
  target table, every table read and every function called. A statement sqlglot does not model
  (`exp.Command`: CHECKPOINT, CREATE MACRO, ...) keeps its leading words instead.

`warehouse.parsing.script` records this once per statement; `warehouse.security.policy` decides on
it. A tree that cannot be had leaves `unchecked` saying why, and the policy refuses the statement.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

#: A table as it is named: (catalog, schema, name), each '' when not given.
TableName = tuple[str, str, str]

_DML_NODES = ("INSERT", "UPDATE", "DELETE", "MERGE")


@dataclass(frozen=True)
class Reads:
    """What a statement names. Names are as written; the policy lower-cases them."""

    tables: frozenset[TableName] = frozenset()
    table_functions: frozenset[str] = frozenset()
    functions: frozenset[str] = frozenset()
    #: DML/DDL: the table written, as (schema, name); None when the target is not a table
    target: tuple[str, str] | None = None
    #: a WITH clause that writes (INSERT/UPDATE/DELETE/MERGE), as DuckDB names its node
    modifying_cte: str | None = None
    #: a statement sqlglot does not model: its first words, upper-cased (CHECKPOINT, ...)
    command_words: tuple[str, ...] = ()
    #: why the tree could not be had (the statement is then refused)
    unchecked: str | None = None
    #: sqlglot may show a table function as a plain call: the policy checks calls as both
    calls_may_be_table_functions: bool = False
    #: SELECT-type statements: each call's name and its positional arguments, a string
    #: constant as its text and anything else as None (which model an AI function names)
    call_arguments: frozenset[tuple[str, tuple[str | None, ...]]] = frozenset()


def select_reads(cur: duckdb.DuckDBPyConnection, sql: str) -> Reads:
    """Walk DuckDB's own parse tree of one SELECT-type statement."""
    try:
        raw = cur.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchall()[0][0]
        tree = json.loads(raw)
    except duckdb.InterruptException:
        raise  # the caller was cancelled while parsing: not a verdict on the SQL
    except (duckdb.Error, ValueError) as error:
        return Reads(unchecked=f"could not check this statement, so it is refused ({error})")
    if tree.get("error"):
        why = tree.get("error_message")
        return Reads(unchecked=f"could not check this statement, so it is refused ({why})")
    tables: set[TableName] = set()
    table_functions: set[str] = set()
    functions: set[str] = set()
    arguments: set[tuple[str, tuple[str | None, ...]]] = set()
    modifying: str | None = None
    for node in _nodes(tree):
        kind = node.get("type")
        if not isinstance(kind, str):
            continue
        if kind.endswith("_QUERY_NODE") and kind.startswith(_DML_NODES):
            modifying = modifying or kind.removesuffix("_QUERY_NODE")
        if kind == "TABLE_FUNCTION":  # qualified as written: system.main.duckdb_tables
            function = node["function"]
            path = [str(function.get(k) or "") for k in ("catalog", "schema", "function_name")]
            table_functions.add(".".join(part for part in path if part))
        elif node.get("class") == "FUNCTION":
            functions.add(str(node.get("function_name", "")))
            arguments.add((str(node.get("function_name", "")), _string_arguments(node)))
        elif kind == "BASE_TABLE":
            tables.add(
                (
                    str(node.get("catalog_name", "")),
                    str(node.get("schema_name", "")),
                    str(node.get("table_name", "")),
                )
            )
    return Reads(
        frozenset(tables),
        frozenset(table_functions),
        frozenset(functions),
        None,
        modifying,
        call_arguments=frozenset(arguments),
    )


def _string_arguments(node: dict[str, Any]) -> tuple[str | None, ...]:
    """A call's positional arguments: a string constant's text, else None."""
    found: list[str | None] = []
    for argument in node.get("arguments") or node.get("children") or []:
        named = isinstance(argument, dict) and "expression" in argument
        if named and argument.get("name"):
            continue
        expression = argument["expression"] if named else argument
        literal = expression.get("literal") if isinstance(expression, dict) else None
        if isinstance(literal, dict) and literal.get("kind") == "STRING":
            found.append(str(literal.get("text")))
        else:
            found.append(None)
    return tuple(found)


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def statement_reads(sql: str, kind: str) -> Reads:
    """sqlglot's view of a DML or DDL statement of DuckDB type `kind` ('INSERT', 'CREATE')."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except SqlglotError as error:
        why = f"could not check this {kind} statement, so it is refused: {error}"
        return Reads(unchecked=why)
    if isinstance(tree, exp.Command):
        return Reads(command_words=leading_words(sql, 6))
    tables: set[TableName] = set()
    table_functions: set[str] = set()
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Func):
            table_functions.add(function_name(table.this))
        else:
            tables.add((table.catalog, table.db, table.name))
    calls = frozenset(function_name(f) for f in tree.find_all(exp.Func))
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    if isinstance(tree, exp.TruncateTable) and tree.expressions:
        target = tree.expressions[0]
    written = (target.db, target.name) if isinstance(target, exp.Table) else None
    return Reads(
        frozenset(tables),
        frozenset(table_functions),
        calls,
        written,
        calls_may_be_table_functions=True,
    )


def function_name(func: exp.Func) -> str:
    """A function's name as DuckDB knows it, lower-cased."""
    return (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()


def leading_words(sql: str, count: int) -> tuple[str, ...]:
    """The first `count` words of `sql` upper-cased, comments skipped (DuckDB's tokenizer).

    >>> leading_words("/* hi */ create  secret s (x)", 3)
    ('CREATE', 'SECRET', 'S')
    """
    tokens = duckdb.tokenize(sql)
    words: list[str] = []
    for i, (start, kind) in enumerate(tokens):
        if kind != duckdb.token_type.comment:
            end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
            words.append(sql[start:end].strip().upper())
        if len(words) == count:
            break
    return tuple(words)


def explained(sql: str) -> tuple[bool, str]:
    """Whether an EXPLAIN runs its statement (ANALYZE), and the statement it explains.

    Found with DuckDB's tokenizer, so comments and options in parentheses are skipped.

    >>> explained("EXPLAIN (FORMAT json) ANALYZE /* x */ copy t to 'f'")
    (True, "copy t to 'f'")
    >>> explained("explain select 1")
    (False, 'select 1')
    """
    tokens = duckdb.tokenize(sql)
    depth, seen_explain, analyze = 0, False, False
    for i, (start, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
        word = sql[start:end].strip().lower()
        if kind == duckdb.token_type.comment:
            continue
        if not seen_explain:
            seen_explain = word == "explain"
        elif word == "(":
            depth += 1
        elif word == ")":
            depth -= 1
        elif depth == 0 and word == "analyze":
            analyze = True
        elif depth == 0:
            return analyze, sql[start:]
    return analyze, ""
