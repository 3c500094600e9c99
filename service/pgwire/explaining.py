"""Running an EXPLAIN: DuckDB's plan, answered as PostgreSQL 15 prints plans.

The explained statement (already rewritten, `portal.sql`) goes to the session as DuckDB's
`EXPLAIN (FORMAT JSON) <statement>`, so the session's policy checks it exactly as it checks
running the statement; `compat.plan` turns DuckDB's plan into PostgreSQL's nodes. The widths of
the scanned columns and of the result come from two more queries through the same session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlglot import exp

from service.pgwire import types as t
from service.pgwire.channel import Channel
from service.pgwire.compat import plan, plan_format
from service.pgwire.explain import chosen_format, schema
from service.pgwire.portal import Portal
from warehouse.errors import UserError


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
        started = time.perf_counter()
        duck = _plan(conn.session.run(verb + portal.sql, timeout_s=timeout_s))
        ran_ms = (time.perf_counter() - started) * 1000
        summary = _summary(duck)
        if explain.analyze and not summary:
            # DuckDB profiles some statements (INSERT) as {"result": "error"} after running
            # them: then the plan comes without actual rows, and the time is measured here
            duck = _plan(conn.session.run("EXPLAIN (FORMAT JSON) " + portal.sql))
            summary = {"Execution Time": ran_ms}
        tables = _tables(conn.session, list(_scanned(duck)))
        width = _result_width(conn.session, portal)
    root = plan.translate(duck, tables, width)
    style = plan_format.Style(costs=explain.costs, verbose=explain.verbose, analyze=explain.analyze)
    if not explain.analyze or explain.summary is False:
        summary = {}
    if format_name == "json":
        document: dict[str, Any] = {"Plan": plan_format.plan_dict(root, style)}
        if "Planning Time" in summary:
            document["Planning Time"] = plan_format.Fixed(summary["Planning Time"], 3)
        if summary:
            document["Triggers"] = []
            document["Execution Time"] = plan_format.Fixed(summary["Execution Time"], 3)
        lines = [plan_format.json_text([document])]
    else:
        lines = plan_format.text_lines(root, style)
        lines += [f"{key}: {value:.3f} ms" for key, value in summary.items()]
    portal.schema = schema(format_name)
    portal.pending = [
        pa.record_batch([pa.array(lines, portal.schema.field(0).type)], portal.schema)
    ]
    portal.oids = [t.JSON if format_name == "json" else t.TEXT]


def _plan(result: Any) -> Any:
    """DuckDB's JSON plan (or profile) from the answer to its EXPLAIN (FORMAT JSON)."""
    return json.loads(str(_rows(result)[-1][1]))


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
    """Planning and execution time (ms) from DuckDB's profile; empty if it holds none."""
    if not isinstance(duck, dict) or not duck.get("operator"):
        return {}
    planning_s = sum(
        float((duck.get(part) or {}).get("total_time") or 0.0)
        for part in ("planner", "optimizer", "physical_planner")
    )
    execution_s = float((duck.get("query") or {}).get("total_time") or 0.0)
    return {"Planning Time": planning_s * 1000, "Execution Time": execution_s * 1000}
