"""Split what a client sends into statements, classify them, rewrite them for DuckDB.

A statement is parsed once (sqlglot, PostgreSQL dialect), rewritten by the compatibility rules of
`service.pgwire.compat`, and rendered as DuckDB SQL when its parameters are known. SET/SHOW/RESET
of client settings and transaction control are recognised here so the session can answer them.
SQL that sqlglot cannot parse (DuckDB-only syntax, wanka's DYNAMIC TABLE statements) goes to
DuckDB as written.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from service.pgwire import compat
from service.pgwire.compat import result_types
from service.pgwire.compat.declared import declared_types
from service.pgwire.compat.names import name_columns
from service.pgwire.errors import SqlError
from service.pgwire.explain import Explain
from service.pgwire.explain import parse as parse_explain
from service.pgwire.settings import SessionCommand, session_command
from warehouse.parsing.script import is_dynamic

_TRANSACTION = re.compile(
    r"^\s*(?P<verb>begin|start\s+transaction|commit|end|rollback|abort)\b(?P<rest>[^;]*);?\s*$",
    re.I,
)
_NOOP = re.compile(r"^\s*(discard|deallocate|listen|unlisten|notify|savepoint|release)\b", re.I)
_DECLARE = re.compile(
    r"^\s*declare\s+(?P<name>\"(?:[^\"]|\"\")+\"|\w+)\s+(?P<options>.*?)\bcursor\s+"
    r"(?:with(?:out)?\s+hold\s+)?for\s+(?P<query>.*)$",
    re.I | re.S,
)
_FETCH = re.compile(
    r"^\s*(?P<verb>fetch|move)\s+(?:(?P<direction>next|forward|all|first)\s+)?"
    r"(?P<count>\d+|all)?\s*(?:from|in)?\s+(?P<name>\"(?:[^\"]|\"\")+\"|\w+)\s*;?\s*$",
    re.I | re.S,
)
_CLOSE = re.compile(r"^\s*close\s+(?P<name>\"(?:[^\"]|\"\")+\"|\w+)\s*;?\s*$", re.I)
_COPY_HEADER = re.compile(r"\bheader\b(?!\s+(false|off|0)\b)", re.I)


@dataclass(frozen=True)
class Copy:
    """COPY (query) TO STDOUT options."""

    format: str = "text"
    header: bool = False


@dataclass(frozen=True)
class Statement:
    """One statement a client sent, ready to render for DuckDB."""

    text: str
    kind: str  # query | dml | ddl | other | set | show | reset | begin | commit | rollback | noop
    tag: str
    tree: exp.Expr | None = None
    command: SessionCommand | None = None
    param_count: int = 0
    copy: Copy | None = None
    cursor: str | None = None  # DECLARE/FETCH/MOVE/CLOSE: the cursor's name
    count: int = 0  # FETCH/MOVE: rows (0 = all)
    binary: bool = False  # DECLARE ... BINARY CURSOR
    uses_session: bool = False  # holds current_user / pg_backend_pid markers
    typed: bool = False  # holds arithmetic still to be typed from the catalog (compat.result_types)
    explain: Explain | None = None  # EXPLAIN: its options; the rest is what it explains
    declared: tuple[int, ...] = ()  # per result column: a type OID DuckDB lacks (name), or 0

    @property
    def returns_rows(self) -> bool:
        return self.kind in ("query", "show", "fetch", "explain") or (
            self.tree is not None and bool(self.tree.find(exp.Returning))
        )

    @functools.cached_property
    def _plain(self) -> str:
        """The DuckDB SQL of a statement without parameters, rendered once."""
        assert self.tree is not None
        return _render(self.tree)

    @functools.cached_property
    def _template(self) -> tuple[str, dict[str, str]]:
        assert self.tree is not None
        return _template(self.tree)

    def render(
        self, params: Sequence[exp.Expr] = (), context: dict[str, exp.Expr] | None = None
    ) -> str:
        """DuckDB SQL with parameters and session values (user, pid) inlined as literals."""
        if self.tree is None:
            return self.explain.statement if self.explain is not None else self.text
        if not params and not self.param_count and not self.uses_session:
            return self._plain
        values = {f"{i + 1}": _render(v) for i, v in enumerate(params)}
        values.update({k: _render(v) for k, v in (context or {}).items()})
        template, slots = self._template
        return template.format_map({slot: values.get(key, "NULL") for slot, key in slots.items()})


def _render(tree: exp.Expr) -> str:
    return tree.sql(dialect="duckdb")


_SLOT = "wanka_slot_{}"


def _template(tree: exp.Expr) -> tuple[str, dict[str, str]]:
    """The statement rendered once with a marker per parameter, for `str.format_map`.

    Binding then costs one string format instead of a tree copy and a render per execution.
    Braces in the SQL are escaped; each marker is a quoted identifier no client writes.
    """
    slots: dict[str, str] = {}

    def mark(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Parameter) and isinstance(node.this, (exp.Literal, exp.Var)):
            slot = _SLOT.format(len(slots))
            slots[slot] = str(node.this.this if isinstance(node.this, exp.Literal) else node.name)
            return exp.column(exp.to_identifier(slot, quoted=True))
        return node

    text = _render(tree.transform(mark)).replace("{", "{{").replace("}", "}}")
    for slot in slots:
        text = text.replace(f'"{slot}"', "{" + slot + "}")
    return text, slots


def split(sql: str) -> list[Statement]:
    """The statements of a query string (empty statements dropped)."""
    return list(_split_cached(sql))


@functools.lru_cache(maxsize=1024)
def _split_cached(sql: str) -> tuple[Statement, ...]:
    return tuple(classify(chunk) for chunk in _chunks(sql) if chunk.strip())


def _chunks(sql: str) -> list[str]:
    try:
        tokens = sqlglot.Dialect.get_or_raise("postgres").tokenize(sql)
    except SqlglotError:
        return [sql]
    chunks, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            chunks.append(sql[start : token.start])
            start = token.end + 1
    chunks.append(sql[start:])
    return [c for c in chunks if c.strip()]


def classify(text: str, resolve: Callable[[exp.Expr], exp.Expr] | None = None) -> Statement:
    """Recognise one statement and rewrite it for DuckDB.

    `resolve` qualifies the client's unqualified relation names first (the session's
    search_path: `warehouse.query.search_path`), before the compatibility rules run.
    """
    command = session_command(text)
    if command is not None:
        return Statement(text, command.verb, command.verb.upper(), command=command)
    transaction = _TRANSACTION.match(text)
    if transaction:
        verb = transaction["verb"].split()[0].lower()
        kind = {"start": "begin", "end": "commit", "abort": "rollback"}.get(verb, verb)
        if kind != "rollback" or "to" not in transaction["rest"].lower().split():
            return Statement(text, kind, kind.upper())
    cursor = _cursor_statement(text, resolve)
    if cursor is not None:
        return cursor
    if _NOOP.match(text):
        verb = text.split()[0].upper()
        return Statement(text, "noop", "DISCARD ALL" if verb == "DISCARD" else verb)
    explained = parse_explain(text)
    if explained is not None:
        return _explain(text, explained, resolve)
    if _first_word(text) in _PASS_THROUGH:  # DuckDB reads these itself
        return Statement(text, "query", _first_word(text))
    if is_dynamic(text):
        # CREATE/ALTER/REFRESH/DROP DYNAMIC TABLE: wanka's own statements, which sqlglot would
        # turn into a plain CREATE TABLE; they answer one row saying what was done
        return Statement(text, "query", _first_word(text))
    return _parsed(text, resolve)


def _parsed(text: str, resolve: Callable[[exp.Expr], exp.Expr] | None) -> Statement:
    """A statement sqlglot reads: parsed, names resolved, rewritten for DuckDB."""
    try:
        tree = sqlglot.parse_one(text, read="postgres")
    except SqlglotError:
        return Statement(text, "other", _first_word(text))
    if isinstance(tree, exp.Command):  # sqlglot gave up: DuckDB reads it as written
        return Statement(
            text, "query" if _first_word(text) in _ROW_VERBS else "other", _first_word(text)
        )
    copy = _copy(tree, text)
    if copy is not None:
        tree = tree.this if isinstance(tree.this, exp.Query) else exp.select("*").from_(tree.this)
    if resolve is not None:
        tree = resolve(tree)
    tree = name_columns(tree, text)
    declared = declared_types(tree)
    tree = compat.rewrite(tree)
    params = {
        int(p.this.this)
        for p in tree.find_all(exp.Parameter)
        if isinstance(p.this, exp.Literal) and not p.this.is_string
    }
    markers = any(isinstance(p.this, exp.Var) for p in tree.find_all(exp.Parameter))
    return Statement(
        text,
        _kind(tree),
        _tag(tree),
        tree,
        param_count=max(params, default=0),
        copy=copy,
        uses_session=markers,
        typed=result_types.wanted(tree),
        declared=declared,
    )


def _explain(
    text: str, options: Explain, resolve: Callable[[exp.Expr], exp.Expr] | None = None
) -> Statement:
    """EXPLAIN: the statement it explains, classified and rewritten as if it ran."""
    inner = classify(options.statement, resolve)
    if inner.kind not in ("query", "dml", "ddl", "other") or inner.copy or inner.explain:
        raise SqlError("42601", f"EXPLAIN cannot explain {inner.tag or 'this statement'}")
    return replace(inner, text=text, kind="explain", tag="EXPLAIN", explain=options)


def _identifier(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _cursor_statement(
    text: str, resolve: Callable[[exp.Expr], exp.Expr] | None = None
) -> Statement | None:
    """DECLARE ... CURSOR FOR, FETCH, MOVE and CLOSE (psycopg's named cursors)."""
    declare = _DECLARE.match(text)
    if declare:
        inner = classify(declare["query"].rstrip().rstrip(";"), resolve)
        if inner.explain is not None:  # PostgreSQL's grammar takes only a query here
            raise SqlError("42601", 'syntax error at or near "EXPLAIN": a cursor needs a query')
        binary = "binary" in declare["options"].lower().split()
        return replace(
            inner,
            text=text,
            kind="declare",
            tag="DECLARE CURSOR",
            cursor=_identifier(declare["name"]),
            binary=binary,
        )
    fetch = _FETCH.match(text)
    if fetch:
        count = fetch["count"] or ("all" if fetch["direction"] == "all" else "1")
        verb = fetch["verb"].lower()
        return Statement(
            text,
            verb,
            verb.upper(),
            cursor=_identifier(fetch["name"]),
            count=0 if count.lower() == "all" else int(count),
        )
    close = _CLOSE.match(text)
    if close:
        return Statement(text, "closecursor", "CLOSE CURSOR", cursor=_identifier(close["name"]))
    return None


_PASS_THROUGH = {"DESCRIBE", "SUMMARIZE", "PRAGMA"}
_ROW_VERBS = {
    "SELECT",
    "WITH",
    "VALUES",
    "TABLE",
    "SHOW",
    "DESCRIBE",
    "EXPLAIN",
    "FROM",
    "SUMMARIZE",
    "PRAGMA",
    "CALL",
}


def _first_word(text: str) -> str:
    words = text.split()
    return words[0].upper() if words else ""


def _copy(tree: exp.Expr, text: str) -> Copy | None:
    if not isinstance(tree, exp.Copy):
        return None
    target = tree.args.get("files") or []
    to_stdout = not tree.args.get("kind") and any(
        str(getattr(f, "name", f)).lower() == "stdout" for f in target
    )
    if not to_stdout:
        return None
    options = text[text.lower().rindex("stdout") + len("stdout") :]
    found = re.search(r"\b(csv|binary|text)\b", options, re.I)  # FORMAT x, or old-style CSV
    return Copy(found[1].lower() if found else "text", bool(_COPY_HEADER.search(options)))


def _kind(tree: exp.Expr) -> str:
    if isinstance(tree, (exp.Query, exp.Describe, exp.Pragma)):
        return "query"
    if isinstance(tree, (exp.Insert, exp.Update, exp.Delete, exp.Merge)):
        return "dml"
    if isinstance(tree, (exp.Create, exp.Drop, exp.Alter)):
        return "ddl"
    return "other"


def _tag(tree: exp.Expr) -> str:
    if isinstance(tree, exp.Query):
        return "SELECT"
    if isinstance(tree, exp.Insert):
        return "INSERT 0"
    if isinstance(tree, exp.Update):
        return "UPDATE"
    if isinstance(tree, exp.Delete):
        return "DELETE"
    if isinstance(tree, exp.Merge):
        return "MERGE"
    if isinstance(tree, (exp.Create, exp.Drop)):
        kind = str(tree.args.get("kind") or "").upper()
        return f"{'CREATE' if isinstance(tree, exp.Create) else 'DROP'} {kind}".strip()
    if isinstance(tree, exp.Alter):
        return f"ALTER {str(tree.args.get('kind') or 'TABLE').upper()}"
    return tree.key.upper()
