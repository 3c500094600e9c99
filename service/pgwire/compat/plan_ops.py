"""PostgreSQL plan nodes made from DuckDB operators, each with its cost.

Costs follow PostgreSQL's units and default constants: reading a page (8 kB of the scanned
columns) costs 1.0 (`seq_page_cost`), handling a row 0.01 (`cpu_tuple_cost`), evaluating an
operator or comparison 0.0025 (`cpu_operator_cost`). Per node, with N input rows, R output rows:

- Seq Scan: pages + N_table * 0.01 (+ N_table * 0.0025 with a filter); Function Scan and
  Result: R * 0.01.
- Filter folded into a node: + N * 0.0025.
- Hash: the cost of its input; Hash Join: starts once the Hash is built, then
  + N_outer * 0.0025 + R * 0.01. Nested Loop: + N_outer * N_inner * 0.0025 + R * 0.01.
  Merge Join: + (N_outer + N_inner) * log2 * 0.0025 + R * 0.01.
- Aggregate and HashAggregate: start after their input, + N * 0.0025 per key and aggregate,
  + R * 0.01. WindowAgg: + N * 0.0025 per window function.
- Sort: starts after its input plus 2 * 0.0025 * N * log2(N) (log2(2 * k) for a top-k), runs
  + N * 0.0025. Limit: its input's startup plus the fraction k / N of its run.
- Append: the sum of its members plus R * 0.005.

So costs grow with the work DuckDB expects to do and compare between queries; they are not
PostgreSQL's numbers for the same data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from service.pgwire.compat.plan_nodes import (
    CPU_OPERATOR_COST,
    CPU_TUPLE_COST,
    DEFAULT_WIDTH,
    PAGE_BYTES,
    SEQ_PAGE_COST,
    Actual,
    Node,
    Table,
)


def as_list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def paren(expression: str) -> str:
    return (
        expression if expression.startswith("(") and expression.endswith(")") else f"({expression})"
    )


_INDEX = re.compile(r"#(\d+)")
_INTERNAL = re.compile(r"__internal_\w+\((?P<inner>[^()]*)\)")


def resolve(expression: str, columns: list[str]) -> str:
    """DuckDB's expression with its column indexes named and its internal wrappers removed.

    >>> resolve("sum(#1)", ["rack", "watts"]), resolve("__internal_decompress_string(#0)", ["s"])
    ('sum(watts)', 's')
    """
    expression = _INTERNAL.sub(lambda m: m["inner"], expression)

    def name(match: re.Match[str]) -> str:
        index = int(match[1])
        return columns[index] if index < len(columns) else match[0]

    return _INDEX.sub(name, expression)


def log2(n: float) -> float:
    return math.log2(n) if n > 1 else 1.0


def with_init_plan(info: Mapping[str, Any], definition: Node, query: Node) -> Node:
    """A materialised CTE: its definition runs first, as the query's InitPlan."""
    definition.relationship = "InitPlan"
    definition.props["Subplan Name"] = f"CTE {info.get('CTE Name', 'cte')}"
    query.children.insert(0, definition)
    query.startup += definition.total
    query.total += definition.total
    return query


def generic(
    node_type: str, rows: float, kids: list[Node], props: dict[str, Any], label: str = ""
) -> Node:
    startup = max((k.startup for k in kids), default=0.0)
    total = sum(k.total for k in kids) + rows * CPU_TUPLE_COST
    width = sum(k.width for k in kids) if kids else 8
    return Node(node_type, rows, width, startup, total, props, children=kids, label=label)


def seq_scan(
    info: Mapping[str, Any], rows: float, tables: Mapping[str, Table], op: Mapping[str, Any]
) -> Node:
    qualified = str(info["Table"])
    parts = qualified.split(".")
    table = tables.get(qualified)
    columns = as_list(info.get("Projections"))
    widths = table.widths if table is not None else {}
    width = sum(widths.get(c, DEFAULT_WIDTH) for c in columns)
    table_rows = float(table.rows) if table is not None and table.rows else rows
    pages = math.ceil(table_rows * max(width, 1) / PAGE_BYTES)
    filters = as_list(info.get("Filters"))
    total = pages * SEQ_PAGE_COST + table_rows * (
        CPU_TUPLE_COST + (CPU_OPERATOR_COST if filters else 0.0)
    )
    props = {"Relation Name": parts[-1], "Schema": parts[-2] if len(parts) > 1 else "main"}
    props["Alias"] = parts[-1]
    node = Node("Seq Scan", rows, width, 0.0, total, props, columns=columns)
    if filters:
        node.details.append(("Filter", paren(" AND ".join(paren(f) for f in filters))))
    if "rows_scanned" in op and "intermediate_rows" in op and filters:
        node.actual = actual(node, int(op["intermediate_rows"]))
        node.actual.removed = int(op["rows_scanned"]) - int(op["intermediate_rows"])
    return node


def fold_filter(child: Node, info: Mapping[str, Any], rows: float, op: Mapping[str, Any]) -> Node:
    label = (
        "Join Filter" if child.node_type in ("Hash Join", "Nested Loop", "Merge Join") else "Filter"
    )
    expression = paren(str(info.get("Expression", "true")))
    existing = [i for i, (key, _) in enumerate(child.details) if key == label]
    if existing:
        index = existing[0]
        child.details[index] = (label, f"({child.details[index][1]} AND {expression})")
    else:
        child.details.append((label, expression))
    child.total += child.rows * CPU_OPERATOR_COST
    before = child.actual.rows if child.actual is not None else None
    child.rows = min(child.rows, rows)
    if "intermediate_rows" in op:
        child.actual = actual(child, int(op["intermediate_rows"]))
        if before is not None:
            child.actual.removed = before - child.actual.rows
    return child


def aggregate(info: Mapping[str, Any], rows: float, kids: list[Node], *, hashed: bool) -> Node:
    child = kids[0] if kids else Node("Result", 1.0, 0, 0.0, CPU_TUPLE_COST)
    groups = [resolve(g, child.columns) for g in as_list(info.get("Groups"))]
    aggregates = [resolve(a, child.columns) for a in as_list(info.get("Aggregates"))]
    per_row = CPU_OPERATOR_COST * max(1, len(groups) + len(aggregates))
    startup = child.total + child.rows * per_row
    width = (child.width if groups else 0) + 8 * len(aggregates)
    node = Node("Aggregate", rows, width, startup, startup + rows * CPU_TUPLE_COST)
    node.props = {"Strategy": "Hashed" if hashed else "Plain", "Partial Mode": "Simple"}
    node.columns = groups + aggregates
    node.label = "HashAggregate" if hashed else "Aggregate"
    if groups:
        node.details.append(("Group Key", groups))
    if hashed:
        node.details.append(("Planned Partitions", 0))
    node.children = [child]
    return node


def hash_join(info: Mapping[str, Any], rows: float, kids: list[Node]) -> Node:
    outer, inner = kids
    hashed = Node("Hash", inner.rows, inner.width, inner.total, inner.total, children=[inner])
    hashed.relationship = "Inner"
    hashed.actual = inner.actual and Actual(
        inner.actual.total_ms, inner.actual.total_ms, inner.actual.rows
    )
    startup = hashed.total + outer.startup
    total = outer.total + hashed.total + outer.rows * CPU_OPERATOR_COST + rows * CPU_TUPLE_COST
    node = Node("Hash Join", rows, outer.width + inner.width, startup, total)
    node.props = {"Join Type": _join_type(info), "Inner Unique": False}
    node.details.append(("Hash Cond", _conditions(info)))
    node.children = [outer, hashed]
    return node


def join(
    label: str, condition: str, info: Mapping[str, Any], rows: float, kids: list[Node]
) -> Node:
    if len(kids) != 2:
        return generic(label, rows, kids, {"Join Type": _join_type(info)})
    outer, inner = kids
    inner.relationship = "Inner"
    if label == "Nested Loop":
        work = outer.rows * inner.rows * CPU_OPERATOR_COST
    else:
        work = (outer.rows * log2(outer.rows) + inner.rows * log2(inner.rows)) * CPU_OPERATOR_COST
    startup = outer.startup + inner.startup
    total = outer.total + inner.total + work + rows * CPU_TUPLE_COST
    node = Node(label, rows, outer.width + inner.width, startup, total, children=[outer, inner])
    node.props = {"Join Type": _join_type(info), "Inner Unique": False}
    if info.get("Conditions"):
        node.details.append((condition, _conditions(info)))
    return node


def _join_type(info: Mapping[str, Any]) -> str:
    kind = str(info.get("Join Type") or "INNER").upper()
    return {"OUTER": "Full", "MARK": "Semi", "SINGLE": "Left"}.get(kind, kind.title())


def _conditions(info: Mapping[str, Any]) -> str:
    found = as_list(info.get("Conditions"))
    return paren(" AND ".join(paren(c) for c in found)) if len(found) > 1 else paren(found[0])


def sort(child: Node, keys: list[str], top: float) -> Node:
    n = child.rows
    compare = 2 * CPU_OPERATOR_COST * n * (log2(2 * top) if top < n else log2(n))
    startup = child.total + compare
    node = Node("Sort", n, child.width, startup, startup + n * CPU_OPERATOR_COST, children=[child])
    node.details.append(("Sort Key", [k.removesuffix(" ASC") for k in keys]))
    return node


def limit(child: Node, count: float) -> Node:
    rows = max(1.0, min(count, child.rows))
    fraction = rows / child.rows if child.rows else 1.0
    total = child.startup + (child.total - child.startup) * fraction
    return Node("Limit", rows, child.width, child.startup, total, children=[child])


def append(kids: list[Node], rows: float) -> Node:
    for kid in kids:
        kid.relationship = "Member"
    total_rows = max(rows, sum(k.rows for k in kids))
    total = sum(k.total for k in kids) + total_rows * CPU_TUPLE_COST * 0.5
    width = max(k.width for k in kids)
    node = Node("Append", total_rows, width, kids[0].startup, total, children=kids)
    node.details.append(("Subplans Removed", 0))
    return node


def actual(node: Node, rows: int) -> Actual:
    """Inclusive time of a node (DuckDB times each operator on its own)."""
    below = sum(k.actual.total_ms for k in node.children if k.actual is not None)
    blocking = node.node_type in ("Sort", "Aggregate", "Hash", "WindowAgg")
    total = below + node.self_ms
    return Actual(total if blocking else 0.0, total, rows)
