"""What an EXPLAIN asks for: its options (PostgreSQL's, plus FORMAT DUCKDB) and its columns.

`statements.classify` reads these and classifies the explained statement like any other (the same
compatibility rewrite); `explaining.run` runs it. `EXPLAIN (FORMAT DUCKDB)`, or `SET
wanka.explain_format = 'duckdb'`, asks for DuckDB's own EXPLAIN as DuckDB prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from service.pgwire.errors import SqlError

FORMAT_SETTING = "wanka.explain_format"
_EXPLAIN = re.compile(r"^\s*explain\b(?P<rest>.*)$", re.I | re.S)
_OPTION = re.compile(r"^\s*(?P<name>\w+)(?:\s+(?P<value>'[^']*'|\w+))?\s*$")
_FLAGS = ("analyze", "verbose", "costs", "buffers", "timing", "summary", "settings", "wal")
_FORMATS = ("text", "json", "duckdb")
_TRUE, _FALSE = ("true", "on", "1", "yes"), ("false", "off", "0", "no")


@dataclass(frozen=True)
class Explain:
    """EXPLAIN's options and the statement it explains, as the client wrote it."""

    statement: str
    format: str | None = None  # None: text, or what the session's wanka.explain_format says
    analyze: bool = False
    verbose: bool = False
    costs: bool = True
    summary: bool | None = None


def parse(text: str) -> Explain | None:
    """EXPLAIN's options, in PostgreSQL's parenthesised or old keyword form; None if no EXPLAIN.

    >>> options = parse("EXPLAIN (FORMAT JSON, COSTS OFF) select 1")
    >>> options.statement, options.format, options.costs
    (' select 1', 'json', False)
    >>> parse("explain analyze verbose select 1").analyze
    True
    """
    match = _EXPLAIN.match(text)
    if match is None:
        return None
    rest, options = match["rest"], {}
    if rest.lstrip().startswith("("):
        head, close, rest = rest.lstrip()[1:].partition(")")
        if not close:
            raise SqlError("42601", "syntax error in EXPLAIN options: no closing parenthesis")
        options = dict(_option(part) for part in head.split(",") if part.strip())
    else:
        words = rest.split(None, 1)
        while words and words[0].lower() in ("analyze", "analyse", "verbose"):
            options["analyze" if words[0].lower() == "analyse" else words[0].lower()] = "true"
            rest = words[1] if len(words) > 1 else ""
            words = rest.split(None, 1)
    if not rest.strip():
        raise SqlError("42601", "syntax error at end of input: EXPLAIN needs a statement")
    return Explain(
        rest,
        format=options.get("format"),
        analyze=_flag(options, "analyze", False),
        verbose=_flag(options, "verbose", False),
        costs=_flag(options, "costs", True),
        summary=_flag(options, "summary", None),
    )


def _option(part: str) -> tuple[str, str]:
    match = _OPTION.match(part)
    if match is None:
        raise SqlError("42601", f"syntax error in EXPLAIN option {part.strip()!r}")
    name, value = match["name"].lower(), (match["value"] or "true").strip("'").lower()
    if name == "format":
        if value not in _FORMATS:
            raise SqlError(
                "0A000", f'EXPLAIN format "{value}" is not offered: use TEXT, JSON or DUCKDB'
            )
    elif name not in _FLAGS:
        raise SqlError("42601", f'unrecognized EXPLAIN option "{name}"')
    elif value not in _TRUE + _FALSE:
        raise SqlError("22023", f'{name} requires a Boolean value, not "{value}"')
    return name, value


def _flag(options: dict[str, str], name: str, default: bool | None) -> Any:
    return options[name] in _TRUE if name in options else default


def chosen_format(explain: Explain, settings: Any) -> str:
    """text, json or duckdb: the statement's FORMAT, else the session's setting, else text."""
    fallback = (settings.get(FORMAT_SETTING) or "text").lower()
    return explain.format or (fallback if fallback in _FORMATS else "text")


def schema(format_name: str) -> pa.Schema:
    """The columns an EXPLAIN answers with: PostgreSQL's one `QUERY PLAN`, or DuckDB's two."""
    if format_name == "duckdb":
        return pa.schema([("explain_key", pa.string()), ("explain_value", pa.string())])
    column = pa.json_(pa.string()) if format_name == "json" else pa.string()
    return pa.schema([("QUERY PLAN", column)])
