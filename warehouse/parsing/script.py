"""One parse of a submitted SQL text: the statements that every later step reads.

Every face hands its text to `parse` once. DuckDB splits it and types each statement
(`extract_statements`); what each statement reads, calls and writes comes from its tree
(`warehouse.parsing.reads`); CREATE / ALTER / REFRESH / DROP DYNAMIC TABLE, which DuckDB does not
know, are recognised by their leading tokens (sqlglot's tokenizer, looked at only when the text says
"dynamic") and a CREATE's tree is parsed then. The policy decides on the `Script`, the serve
process's write gate asks it whether it writes, `warehouse.query.executor.execute` runs DuckDB's
parsed statements and `warehouse.dynamic.statements` runs ours.

A call of the PromQL table functions (`promql_range`, `promql_query`) is expanded into its
SQL first (`warehouse.promql.sql_function`), so everything after sees plain SQL.

A parse depends on the text alone, so a text parsed a second time is kept (least recently used,
4,096): a dashboard's repeated query costs a dictionary lookup before it runs. A text seen once is
not: most texts never come back (the PromQL paths write their times and block ids into theirs),
and a kept script holds DuckDB's parse tree, ~24 KB for a 700-character SELECT (4,096 of those
took 96 MiB, which a long-running server gained as the cache filled). Only a hash of a text seen
once is remembered (least recently seen, `_SEEN_MAX`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from warehouse.errors import UserError, one_line
from warehouse.parsing.reads import Reads, explained, leading_words, select_reads, statement_reads
from warehouse.promql import sql_function

DYNAMIC_VERBS = ("CREATE", "ALTER", "REFRESH", "DROP")
#: Statement types that change nothing (EXPLAIN ANALYZE runs what it explains: see `writes`).
_READ_ONLY_TYPES = frozenset({"SELECT", "EXPLAIN", "TRANSACTION"})
_TRANSACTION_VERBS = {"BEGIN": "BEGIN", "START": "BEGIN", "COMMIT": "COMMIT", "END": "COMMIT"}


@dataclass(frozen=True)
class DynamicStatement:
    """CREATE / ALTER / REFRESH / DROP DYNAMIC TABLE: the verb, the tokens after `DYNAMIC
    TABLE`, and for CREATE the statement's sqlglot tree (its properties and SELECT)."""

    verb: str
    rest: tuple[Token, ...]
    tree: exp.Create | None = None


NOTHING_READ = Reads()


@dataclass(frozen=True)
class Statement:
    """One statement of a script, parsed."""

    text: str
    #: DuckDB's statement type ('SELECT', 'INSERT', 'MERGE_INTO', 'TRANSACTION', ...), or
    #: 'CREATE DYNAMIC TABLE' etc. for ours, or 'UNKNOWN' for a type this DuckDB cannot name
    type: str
    parsed: Any = None  # DuckDB's parsed statement (duckdb.Statement), run without reparsing
    dynamic: DynamicStatement | None = None
    reads: Reads = NOTHING_READ
    explained: Statement | None = None  # EXPLAIN: the statement it explains
    analyze: bool = False  # EXPLAIN ANALYZE: runs what it explains

    @property
    def writes(self) -> bool:
        """Whether running it may change the database (what the write gate asks)."""
        if self.dynamic is not None:
            return True
        if self.type == "EXPLAIN":
            return self.analyze
        if self.type == "SELECT":
            return self.reads.modifying_cte is not None
        return self.type not in _READ_ONLY_TYPES

    @property
    def transaction(self) -> str | None:
        """'BEGIN', 'COMMIT' or 'ROLLBACK' for transaction control, else None."""
        if self.type != "TRANSACTION":
            return None
        words = leading_words(self.text, 1)
        return _TRANSACTION_VERBS.get(words[0], "ROLLBACK") if words else None


@dataclass(frozen=True)
class Script:
    """A submitted text and its statements, in order (never empty)."""

    text: str
    statements: tuple[Statement, ...]

    @property
    def last(self) -> Statement:
        return self.statements[-1]

    @property
    def writes(self) -> bool:
        return any(s.writes for s in self.statements)


_CACHE: OrderedDict[str, Script] = OrderedDict()
_CACHE_MAX = 4096
_CACHE_TEXT_MAX = 1 << 16  # longer texts are parsed each time rather than kept
_CACHE_LOCK = threading.Lock()
#: Hashes of texts parsed once and not kept (a text is kept the second time it is parsed).
_SEEN: OrderedDict[int, None] = OrderedDict()
_SEEN_MAX = 16_384


def parse(cur: duckdb.DuckDBPyConnection, sql: str) -> Script:
    """The statements of `sql`; bad SQL raises UserError naming what DuckDB could not parse.

    `cur` is any cursor of the database: DuckDB parses and serialises SELECT trees on it.
    """
    if sql_function.mentions(sql) and not is_dynamic(sql):
        # promql_range(...) holds its times (now() among them): expanded each time, not kept
        expanded = sql_function.expand(cur, sql)
        if expanded != sql:
            return Script(expanded, tuple(_statements(cur, expanded)))
    with _CACHE_LOCK:
        hit = _CACHE.get(sql)
        if hit is not None:
            _CACHE.move_to_end(sql)
            return hit
    script = Script(sql, tuple(_statements(cur, sql)))
    if len(sql) <= _CACHE_TEXT_MAX:
        _keep(sql, script)
    return script


def _keep(sql: str, script: Script) -> None:
    """Keep `script` if its text was parsed before; else remember that it was seen."""
    seen = hash(sql)
    with _CACHE_LOCK:
        if seen in _SEEN:
            del _SEEN[seen]
            _CACHE[sql] = script
            if len(_CACHE) > _CACHE_MAX:
                _CACHE.popitem(last=False)
            return
        _SEEN[seen] = None
        if len(_SEEN) > _SEEN_MAX:
            _SEEN.popitem(last=False)


def _statements(cur: duckdb.DuckDBPyConnection, sql: str) -> list[Statement]:
    pieces = _dynamic_pieces(sql)
    if pieces is None:
        found = _analysed(cur, sql)
    else:
        found = []
        for text, dynamic in pieces:
            if dynamic is None:
                found.extend(_analysed(cur, text))
            else:
                found.append(Statement(text, f"{dynamic.verb} DYNAMIC TABLE", dynamic=dynamic))
    if not found:
        raise UserError("no SQL statement given")
    return found


def _extract(cur: duckdb.DuckDBPyConnection, sql: str) -> list[Any] | Statement:
    """DuckDB's statements of `sql`, or an UNKNOWN statement when it cannot name a type."""
    try:
        return list(cur.extract_statements(sql))
    except duckdb.Error as error:
        raise UserError(one_line(str(error))) from None
    except ValueError as error:  # a statement type the Python enum does not know
        why = f"statement of an unknown type refused ({error})"
        return Statement(sql, "UNKNOWN", reads=Reads(unchecked=why))


def _analysed(cur: duckdb.DuckDBPyConnection, sql: str) -> list[Statement]:
    found = _extract(cur, sql)
    if isinstance(found, Statement):
        return [found]
    return [_statement(cur, parsed) for parsed in found]


def statement_type(parsed: Any) -> str:
    """DuckDB's name for a parsed statement's type: 'SELECT', 'COPY', 'MERGE_INTO', ..."""
    return str(parsed.type).rsplit(".", 1)[-1]


def _statement(cur: duckdb.DuckDBPyConnection, parsed: Any) -> Statement:
    kind, text = statement_type(parsed), str(parsed.query)
    if kind == "SELECT":
        return Statement(text, kind, parsed, reads=select_reads(cur, text))
    if kind == "TRANSACTION":
        return Statement(text, kind, parsed)
    if kind != "EXPLAIN":
        return Statement(text, kind, parsed, reads=statement_reads(text, kind))
    analyze, inner_text = explained(text)
    inner = _extract(cur, inner_text) if inner_text.strip() else []
    if isinstance(inner, Statement) or len(inner) != 1:
        unchecked = Reads(unchecked="EXPLAIN takes one statement")
        return Statement(text, kind, parsed, reads=unchecked, analyze=analyze)
    return Statement(text, kind, parsed, explained=_statement(cur, inner[0]), analyze=analyze)


# -- DYNAMIC TABLE statements ----------------------------------------------------------------


def _dynamic_pieces(sql: str) -> list[tuple[str, DynamicStatement | None]] | None:
    """The statements of `sql`, cut at semicolons, when any is a DYNAMIC TABLE statement."""
    cut = _cut(sql)
    if cut is None or not any(_verb(tokens) for _, tokens in cut):
        return None
    return [(text, _dynamic(text, tokens)) for text, tokens in cut]


def is_dynamic(sql: str) -> bool:
    """Whether one of the statements of `sql` is a DYNAMIC TABLE statement (nothing parsed).

    >>> is_dynamic("refresh dynamic table t full"), is_dynamic("select 'dynamic table'")
    (True, False)
    """
    cut = _cut(sql)
    return cut is not None and any(_verb(tokens) for _, tokens in cut)


def _cut(sql: str) -> list[tuple[str, list[Token]]] | None:
    """`sql` cut at semicolons into (text, tokens); None when it cannot hold one of ours."""
    if "dynamic" not in sql.lower():
        return None  # the common case: no need to tokenize
    try:
        tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    except SqlglotError:
        return None  # DuckDB will say what is wrong with it
    pieces: list[tuple[str, list[Token]]] = []
    current: list[Token] = []
    for token in [*tokens, None]:
        if token is None or token.token_type == TokenType.SEMICOLON:
            if current:
                pieces.append((sql[current[0].start : current[-1].end + 1], current))
            current = []
        else:
            current.append(token)
    return pieces


def _verb(tokens: list[Token]) -> str | None:
    words = [t.text.upper() for t in tokens[:3]]
    if len(words) == 3 and words[0] in DYNAMIC_VERBS and words[1:] == ["DYNAMIC", "TABLE"]:
        return words[0]
    return None


def _dynamic(text: str, tokens: list[Token]) -> DynamicStatement | None:
    verb = _verb(tokens)
    if verb is None:
        return None
    tree = None
    if verb == "CREATE":
        try:
            parsed = sqlglot.parse_one(text, read="duckdb")
        except SqlglotError as error:
            raise UserError(f"cannot parse CREATE DYNAMIC TABLE: {error}") from None
        if not isinstance(parsed, exp.Create) or parsed.expression is None:
            raise UserError("expected CREATE DYNAMIC TABLE name WITH (...) AS SELECT ...")
        tree = parsed
    return DynamicStatement(verb, tuple(tokens[3:]), tree)
