"""EXPLAIN as PostgreSQL answers it: one `QUERY PLAN` column, text lines or one JSON document.

The explained statement is classified like any other (`statements.classify`: the same
compatibility rewrite) and sent to the session as DuckDB's `EXPLAIN (FORMAT JSON) <statement>`,
so the session's policy checks it exactly as it checks running the statement. DuckDB's plan is
then printed by `compat.plan`. `EXPLAIN (FORMAT DUCKDB)`, or `SET wanka.explain_format =
'duckdb'`, gives DuckDB's own EXPLAIN as it prints it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from service.pgwire import types as t
from service.pgwire.compat import plan
from service.pgwire.errors import SqlError
from warehouse.errors import UserError

if TYPE_CHECKING:
    from service.pgwire.channel import Channel
    from service.pgwire.portal import Portal

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


def run(conn: Channel, portal: Portal, timeout_s: float | None) -> None:
    """Explain the portal's statement (blocking): `portal.sql` is the statement, rendered."""
    explain = portal.statement.explain
    assert explain is not None
    format_name = chosen_format(explain, conn.settings)
    conn.release_session()
    with conn.session.turn():
        if format_name == "duckdb":
            verb = "EXPLAIN ANALYZE " if explain.analyze else "EXPLAIN "
            portal.attach(conn.session.run(verb + portal.sql, timeout_s=timeout_s))
            portal.materialize()
            return
        verb = "EXPLAIN ANALYZE (FORMAT JSON) " if explain.analyze else "EXPLAIN (FORMAT JSON) "
        answer = _rows(conn.session.run(verb + portal.sql, timeout_s=timeout_s))
        duck = json.loads(str(answer[-1][1]))
        tables = _tables(conn.session, list(_scanned(duck)))
        width = _result_width(conn.session, portal)
    root = plan.translate(duck, tables, width)
    style = plan.Style(costs=explain.costs, verbose=explain.verbose, analyze=explain.analyze)
    summary = _summary(duck) if explain.analyze and explain.summary is not False else {}
    if format_name == "json":
        document: dict[str, Any] = {"Plan": plan.plan_dict(root, style)}
        if summary:
            document.update(
                {
                    "Planning Time": plan.Fixed(summary["Planning Time"], 3),
                    "Triggers": [],
                    "Execution Time": plan.Fixed(summary["Execution Time"], 3),
                }
            )
        lines = [plan.json_text([document])]
    else:
        lines = plan.text_lines(root, style)
        lines += [f"{key}: {value:.3f} ms" for key, value in summary.items()]
    portal.schema = schema(format_name)
    portal.pending = [
        pa.record_batch([pa.array(lines, portal.schema.field(0).type)], portal.schema)
    ]
    portal.oids = [t.JSON if format_name == "json" else t.TEXT]


def _rows(result: Any) -> list[tuple[Any, ...]]:
    table = result.reader.read_all()
    return list(zip(*(column.to_pylist() for column in table.columns), strict=True))


def _scanned(duck: Any) -> Iterator[str]:
    """The qualified names of the tables a DuckDB plan scans."""
    stack = [duck]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            table = (item.get("extra_info") or {}).get("Table")
            if isinstance(table, str):
                yield table
            stack.extend(item.get("children") or [])
            stack.extend(item.get("operator") or [])


@cache
def _tables_sql() -> str:
    return (Path(__file__).parent / "compat" / "plan_tables.sql").read_text()


def _tables(session: Any, names: list[str]) -> dict[str, plan.Table]:
    """Column widths and row counts of the scanned tables (through the session's policy)."""
    if not names:
        return {}
    widths: dict[str, dict[str, int]] = {}
    sizes: dict[str, int] = {}
    try:
        rows = _rows(session.run(_tables_sql(), [sorted(set(names))]))
    except UserError:  # widths are a courtesy: the plan stands without them
        return {}
    for qualified, column, data_type, size in rows:
        widths.setdefault(qualified, {})[column] = plan.type_width(data_type)
        sizes[qualified] = int(size or 0)
    return {name: plan.Table(widths[name], sizes[name]) for name in widths}


def _result_width(session: Any, portal: Portal) -> int | None:
    """The byte width of the statement's result row, from DuckDB's DESCRIBE of it."""
    if not isinstance(portal.statement.tree, exp.Query):
        return None
    try:
        rows = _rows(session.run("DESCRIBE " + portal.sql))
    except UserError:
        return None
    return sum(plan.type_width(str(row[1])) for row in rows)


def _summary(duck: Any) -> dict[str, float]:
    """Planning and execution time (ms) from DuckDB's profile."""
    if not isinstance(duck, dict):
        return {}
    planning_s = sum(
        float((duck.get(part) or {}).get("total_time") or 0.0)
        for part in ("planner", "optimizer", "physical_planner")
    )
    execution_s = float((duck.get("query") or {}).get("total_time") or 0.0)
    return {"Planning Time": planning_s * 1000, "Execution Time": execution_s * 1000}
