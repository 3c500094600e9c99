"""PostgreSQL 15's EXPLAIN formats for `compat.plan`'s nodes: text lines and JSON.

Text: the top node's line, then each child indented by six spaces under `->  `, with its detail
lines (`Filter: ...`) two spaces in. JSON: one document, keys in PostgreSQL's order, two spaces
per level, costs with two decimals and times with three, as PostgreSQL prints them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from service.pgwire.compat.plan_nodes import Node


@dataclass(frozen=True)
class Style:
    """What EXPLAIN's options ask to be printed."""

    costs: bool = True
    verbose: bool = False
    analyze: bool = False


def text_lines(node: Node, style: Style) -> list[str]:
    """The plan as PostgreSQL's text format prints it, one line per row."""
    return list(_text(node, style, 0, top=True))


def _headline(node: Node, style: Style) -> str:
    label = node.label or node.node_type
    if node.node_type == "Seq Scan":
        relation = node.props["Relation Name"]
        label += f" on {node.props['Schema']}.{relation}" if style.verbose else f" on {relation}"
    elif node.node_type == "Function Scan":
        label += f" on {node.props['Function Name']}"
    elif node.node_type == "CTE Scan":
        label += f" on {node.props['CTE Name']}"
    elif node.node_type == "ModifyTable":
        label = node.label
    if style.costs:
        label += (
            f"  (cost={node.startup:.2f}..{node.total:.2f} rows={node.rows:.0f} width={node.width})"
        )
    if style.analyze and node.actual is not None:
        actual = node.actual
        label += (
            f" (actual time={actual.startup_ms:.3f}..{actual.total_ms:.3f} rows={actual.rows}"
            " loops=1)"
        )
    return label


def _text(node: Node, style: Style, depth: int, top: bool = False) -> Iterator[str]:
    indent = " " * (depth * 6 - 4) if depth else ""
    yield f"{indent}->  {_headline(node, style)}" if not top else _headline(node, style)
    pad = " " * (depth * 6 + 2)
    if style.verbose and node.columns:
        yield f"{pad}Output: {', '.join(node.columns)}"
    for key, value in node.details:
        if key in ("Subplans Removed", "Planned Partitions"):  # JSON only, as in PostgreSQL
            continue
        shown = ", ".join(value) if isinstance(value, list) else value
        yield f"{pad}{key}: {shown}"
        removed = node.actual.removed if style.analyze and node.actual is not None else None
        if key in ("Filter", "Join Filter") and removed is not None:
            yield f"{pad}Rows Removed by {key}: {removed}"
    for kid in node.children:
        if "Subplan Name" in kid.props:  # PostgreSQL names an InitPlan on a line of its own
            yield f"{pad}{kid.props['Subplan Name']}"
        yield from _text(kid, style, depth + 1)


def plan_dict(node: Node, style: Style, top: bool = True) -> dict[str, Any]:
    """The plan as PostgreSQL's JSON format orders its keys."""
    out = _identity(node, top, style)
    if style.costs:
        out["Startup Cost"] = Fixed(node.startup, 2)
        out["Total Cost"] = Fixed(node.total, 2)
        out["Plan Rows"] = round(node.rows)
        out["Plan Width"] = node.width
    if style.analyze and node.actual is not None:
        out["Actual Startup Time"] = Fixed(node.actual.startup_ms, 3)
        out["Actual Total Time"] = Fixed(node.actual.total_ms, 3)
        out["Actual Rows"] = node.actual.rows
        out["Actual Loops"] = 1
    if style.verbose:
        out["Output"] = node.columns
    if "Inner Unique" in node.props:
        out["Inner Unique"] = node.props["Inner Unique"]
    for key, value in node.details:
        if key == "Planned Partitions" and not style.costs:  # a cost estimate, so PostgreSQL's too
            continue
        out[key] = value
        removed = node.actual.removed if style.analyze and node.actual is not None else None
        if key in ("Filter", "Join Filter") and removed is not None:
            out[f"Rows Removed by {key}"] = removed
    if node.children:
        out["Plans"] = [plan_dict(kid, style, top=False) for kid in node.children]
    return out


def _identity(node: Node, top: bool, style: Style) -> dict[str, Any]:
    """The keys before the costs: what the node is, where it hangs, what it reads."""
    out: dict[str, Any] = {"Node Type": node.node_type}
    out.update(
        {k: node.props[k] for k in ("Strategy", "Partial Mode", "Operation") if k in node.props}
    )
    if not top:
        out["Parent Relationship"] = node.relationship
        if "Subplan Name" in node.props:
            out["Subplan Name"] = node.props["Subplan Name"]
    out["Parallel Aware"] = False
    out["Async Capable"] = False
    if "Relation Name" in node.props:
        out["Relation Name"] = node.props["Relation Name"]
        if style.verbose:
            out["Schema"] = node.props["Schema"]
    for key in ("Function Name", "CTE Name", "Alias", "Join Type"):
        if key in node.props:
            out[key] = node.props[key]
    return out


@dataclass(frozen=True)
class Fixed:
    """A number PostgreSQL prints with a fixed count of decimals (costs 2, times 3)."""

    value: float
    places: int


def json_text(document: Any, indent: int = 0) -> str:
    """JSON laid out as PostgreSQL's EXPLAIN prints it: two spaces per level, fixed decimals.

    >>> print(json_text([{"Plan": {"Total Cost": Fixed(1.5, 2), "Plans": []}}]))
    [
      {
        "Plan": {
          "Total Cost": 1.50,
          "Plans": []
        }
      }
    ]
    """
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(document, Fixed):
        return f"{document.value:.{document.places}f}"
    if isinstance(document, dict) and document:
        items = [f"{inner}{json.dumps(k)}: {json_text(v, indent + 1)}" for k, v in document.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(document, list) and document:
        items = [f"{inner}{json_text(v, indent + 1)}" for v in document]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(document)
