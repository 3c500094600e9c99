"""DuckDB's physical plan as PostgreSQL 15 plan nodes: node types, costs, rows, widths.

Clients that read `EXPLAIN` (Superset's "Estimate cost", DBeaver's and pgAdmin's plan views,
Metabase) parse PostgreSQL's shapes. `translate` maps DuckDB's `EXPLAIN (FORMAT JSON)` tree (or
the operator tree of `EXPLAIN (ANALYZE, FORMAT JSON)`) to PostgreSQL's nodes; `compat.plan_format`
prints them as PostgreSQL's text and JSON formats do.

Nodes. PROJECTION, RESULT_COLLECTOR and EXPLAIN_ANALYZE fold away (PostgreSQL has no projection
node). FILTER folds into the node under it as its `Filter` (`Join Filter` on a join). TOP_N is a
Limit over a Sort, HASH_JOIN a Hash Join with a Hash on its inner (build) side, group-bys are
HashAggregate, ungrouped aggregates Aggregate, UNION Append, table functions Function Scan, and
DUMMY_SCAN/EMPTY_RESULT Result. An operator without a PostgreSQL counterpart keeps DuckDB's name.

Rows are DuckDB's `Estimated Cardinality` (at least 1, as PostgreSQL clamps them). Widths are
PostgreSQL's byte widths of the columns (int4 4, int8 8, float8 8, timestamp 8, text 32 ...):
a scan's are those of the columns it reads, a join's the sum of its sides', an aggregate's its
group columns' plus 8 per aggregate, and the top node's those of the statement's result.

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
    type_width,
)

__all__ = ["Actual", "Node", "Table", "translate", "type_width"]


def translate(plan: Any, tables: Mapping[str, Table], result_width: int | None = None) -> Node:
    """The PostgreSQL plan for DuckDB's JSON plan (a list of root operators or a profile)."""
    root = _root(plan)
    node = _node(root, tables)
    finish_actuals(node)
    if result_width is not None:
        _set_width(node, result_width)
    return node


def _root(plan: Any) -> dict[str, Any]:
    if isinstance(plan, dict) and "operator" in plan:  # EXPLAIN ANALYZE's profile
        plan = plan["operator"]
    if isinstance(plan, list):
        plan = plan[0]
    while plan.get("name") in ("RESULT_COLLECTOR", "EXPLAIN_ANALYZE") and plan.get("children"):
        plan = plan["children"][0]
    return dict(plan)


def _set_width(node: Node, width: int) -> None:
    """The result's width on the top node and the nodes that only pass its rows on."""
    node.width = width
    if node.node_type in ("Limit", "Sort") and node.children:
        _set_width(node.children[0], width)


def _list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _cardinality(info: Mapping[str, Any]) -> float:
    try:
        return max(1.0, float(info.get("Estimated Cardinality") or 1))
    except ValueError:
        return 1.0


def _paren(expression: str) -> str:
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


def _log2(n: float) -> float:
    return math.log2(n) if n > 1 else 1.0


def _node(op: Mapping[str, Any], tables: Mapping[str, Table]) -> Node:
    name = str(op.get("name", "")).strip().upper()
    info: Mapping[str, Any] = op.get("extra_info") or {}
    kids = [_node(child, tables) for child in op.get("children") or []]
    rows = _cardinality(info)
    node = _build(name, info, rows, kids, op, tables)
    _inherit_columns(node)
    node.self_ms += float(op.get("timing") or 0.0) * 1000
    if "intermediate_rows" in op:
        _measured(node, int(op["intermediate_rows"]))
    return node


def _inherit_columns(node: Node) -> None:
    """A node made here without columns passes on those of its inputs (a join: both sides')."""
    if not node.columns:
        for kid in node.children:
            _inherit_columns(kid)
        node.columns = [column for kid in node.children for column in kid.columns]


def _measured(node: Node, rows: int) -> None:
    """ANALYZE: the rows an operator gave, on the nodes made for it that have none yet."""
    if node.actual is None:
        node.actual = Actual(0.0, 0.0, rows)
        for kid in node.children:
            _measured(kid, rows)


def _build(
    name: str,
    info: Mapping[str, Any],
    rows: float,
    kids: list[Node],
    op: Mapping[str, Any],
    tables: Mapping[str, Table],
) -> Node:
    if not kids:
        return _leaf(name, info, rows, op, tables)
    if name in ("RESULT_COLLECTOR", "EXPLAIN_ANALYZE", "PROJECTION", "FILTER") and len(kids) == 1:
        return _folded(name, info, rows, kids[0], op)
    if name in ("HASH_GROUP_BY", "PERFECT_HASH_GROUP_BY", "PARTITIONED_AGGREGATE"):
        return _aggregate(info, rows, kids, hashed=True)
    if name in ("UNGROUPED_AGGREGATE", "SIMPLE_AGGREGATE"):
        return _aggregate(info, 1.0, kids, hashed=False)
    if name in _HASH_JOINS and len(kids) == 2:
        return _hash_join(info, rows, kids)
    if name in ("NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN", "CROSS_PRODUCT", "POSITIONAL_SCAN"):
        return _join("Nested Loop", "Join Filter", info, rows, kids)
    if name in ("PIECEWISE_MERGE_JOIN", "IE_JOIN", "ASOF_JOIN", "MERGE_JOIN"):
        return _join("Merge Join", "Merge Cond", info, rows, kids)
    if name == "UNION":
        return _append(kids, rows)
    if name in ("CTE", "MATERIALIZED_CTE") and len(kids) == 2:
        return _with_init_plan(info, *kids)
    if name in ("INSERT", "UPDATE", "DELETE", "BATCH_INSERT", "MERGE_INTO"):
        operation = name.split("_")[-1].title()
        return _generic("ModifyTable", rows, kids, {"Operation": operation}, label=operation)
    return _ordering(name, info, rows, kids)


_HASH_JOINS = ("HASH_JOIN", "LEFT_DELIM_JOIN", "RIGHT_DELIM_JOIN", "DELIM_JOIN")


def _leaf(
    name: str,
    info: Mapping[str, Any],
    rows: float,
    op: Mapping[str, Any],
    tables: Mapping[str, Table],
) -> Node:
    """Scans: of a table, a table function, a CTE, VALUES, or of nothing (Result)."""
    if name in ("SEQ_SCAN", "TABLE_SCAN") and info.get("Table"):
        return _seq_scan(info, rows, tables, op)
    if info.get("Function") or name in ("GENERATE_SERIES", "RANGE", "UNNEST"):
        function = str(info.get("Function") or name).lower()
        props = {"Function Name": function, "Alias": function}
        return Node("Function Scan", rows, 8, 0.0, rows * CPU_TUPLE_COST, props)
    if name in ("DUMMY_SCAN", "EMPTY_RESULT"):
        return Node("Result", 1.0, 0, 0.0, CPU_TUPLE_COST)
    if name in ("COLUMN_DATA_SCAN", "CHUNK_SCAN"):
        return Node("Values Scan", rows, 8, 0.0, rows * CPU_TUPLE_COST, {"Alias": "*VALUES*"})
    if name == "CTE_SCAN":
        cte = str(info.get("CTE Name", "cte"))
        props = {"CTE Name": cte, "Alias": cte}
        return Node("CTE Scan", rows, 8, 0.0, rows * CPU_TUPLE_COST, props)
    return _generic(name.replace("_", " ").title(), rows, [], {})


def _folded(
    name: str, info: Mapping[str, Any], rows: float, child: Node, op: Mapping[str, Any]
) -> Node:
    """Operators PostgreSQL has no node for: they become part of the node under them."""
    if name == "PROJECTION":
        child.columns = [resolve(p, child.columns) for p in _list(info.get("Projections"))]
    elif name == "FILTER":
        return _fold_filter(child, info, rows, op)
    return child


def _ordering(name: str, info: Mapping[str, Any], rows: float, kids: list[Node]) -> Node:
    """Sort, Limit and WindowAgg: nodes over one input, in its order or ordering it."""
    child = kids[0]
    keys = [resolve(k, child.columns) for k in _list(info.get("Order By"))]
    if name == "ORDER_BY":
        return _sort(child, keys, child.rows)
    if name == "TOP_N":
        limit = float(info.get("Top") or rows)
        return _limit(_sort(child, keys, limit), limit)
    if name in ("LIMIT", "STREAMING_LIMIT", "LIMIT_PERCENT"):
        try:
            limit = float(info.get("Limit") or child.rows)
        except ValueError:
            limit = child.rows
        return _limit(child, limit)
    if name in ("WINDOW", "STREAMING_WINDOW"):
        functions = max(1, len(_list(info.get("Projections"))))
        total = child.total + child.rows * CPU_OPERATOR_COST * functions
        node = Node("WindowAgg", child.rows, child.width + 8 * functions, child.startup, total)
        node.children = [child]
        return node
    return _generic(name.replace("_", " ").title(), rows, kids, {})


def _with_init_plan(info: Mapping[str, Any], definition: Node, query: Node) -> Node:
    """A materialised CTE: its definition runs first, as the query's InitPlan."""
    definition.relationship = "InitPlan"
    definition.props["Subplan Name"] = f"CTE {info.get('CTE Name', 'cte')}"
    query.children.insert(0, definition)
    query.startup += definition.total
    query.total += definition.total
    return query


def _generic(
    node_type: str, rows: float, kids: list[Node], props: dict[str, Any], label: str = ""
) -> Node:
    startup = max((k.startup for k in kids), default=0.0)
    total = sum(k.total for k in kids) + rows * CPU_TUPLE_COST
    width = sum(k.width for k in kids) if kids else 8
    return Node(node_type, rows, width, startup, total, props, children=kids, label=label)


def _seq_scan(
    info: Mapping[str, Any], rows: float, tables: Mapping[str, Table], op: Mapping[str, Any]
) -> Node:
    qualified = str(info["Table"])
    parts = qualified.split(".")
    table = tables.get(qualified)
    columns = _list(info.get("Projections"))
    widths = table.widths if table is not None else {}
    width = sum(widths.get(c, DEFAULT_WIDTH) for c in columns)
    table_rows = float(table.rows) if table is not None and table.rows else rows
    pages = math.ceil(table_rows * max(width, 1) / PAGE_BYTES)
    filters = _list(info.get("Filters"))
    total = pages * SEQ_PAGE_COST + table_rows * (
        CPU_TUPLE_COST + (CPU_OPERATOR_COST if filters else 0.0)
    )
    props = {"Relation Name": parts[-1], "Schema": parts[-2] if len(parts) > 1 else "main"}
    props["Alias"] = parts[-1]
    node = Node("Seq Scan", rows, width, 0.0, total, props, columns=columns)
    if filters:
        node.details.append(("Filter", _paren(" AND ".join(_paren(f) for f in filters))))
    if "rows_scanned" in op and "intermediate_rows" in op and filters:
        node.actual = _actual(node, int(op["intermediate_rows"]))
        node.actual.removed = int(op["rows_scanned"]) - int(op["intermediate_rows"])
    return node


def _fold_filter(child: Node, info: Mapping[str, Any], rows: float, op: Mapping[str, Any]) -> Node:
    label = (
        "Join Filter" if child.node_type in ("Hash Join", "Nested Loop", "Merge Join") else "Filter"
    )
    expression = _paren(str(info.get("Expression", "true")))
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
        child.actual = _actual(child, int(op["intermediate_rows"]))
        if before is not None:
            child.actual.removed = before - child.actual.rows
    return child


def _aggregate(info: Mapping[str, Any], rows: float, kids: list[Node], *, hashed: bool) -> Node:
    child = kids[0] if kids else Node("Result", 1.0, 0, 0.0, CPU_TUPLE_COST)
    groups = [resolve(g, child.columns) for g in _list(info.get("Groups"))]
    aggregates = [resolve(a, child.columns) for a in _list(info.get("Aggregates"))]
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


def _hash_join(info: Mapping[str, Any], rows: float, kids: list[Node]) -> Node:
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


def _join(
    label: str, condition: str, info: Mapping[str, Any], rows: float, kids: list[Node]
) -> Node:
    if len(kids) != 2:
        return _generic(label, rows, kids, {"Join Type": _join_type(info)})
    outer, inner = kids
    inner.relationship = "Inner"
    if label == "Nested Loop":
        work = outer.rows * inner.rows * CPU_OPERATOR_COST
    else:
        work = (outer.rows * _log2(outer.rows) + inner.rows * _log2(inner.rows)) * CPU_OPERATOR_COST
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
    found = _list(info.get("Conditions"))
    return _paren(" AND ".join(_paren(c) for c in found)) if len(found) > 1 else _paren(found[0])


def _sort(child: Node, keys: list[str], limit: float) -> Node:
    n = child.rows
    compare = 2 * CPU_OPERATOR_COST * n * (_log2(2 * limit) if limit < n else _log2(n))
    startup = child.total + compare
    node = Node("Sort", n, child.width, startup, startup + n * CPU_OPERATOR_COST, children=[child])
    node.details.append(("Sort Key", [k.removesuffix(" ASC") for k in keys]))
    return node


def _limit(child: Node, limit: float) -> Node:
    rows = max(1.0, min(limit, child.rows))
    fraction = rows / child.rows if child.rows else 1.0
    total = child.startup + (child.total - child.startup) * fraction
    return Node("Limit", rows, child.width, child.startup, total, children=[child])


def _append(kids: list[Node], rows: float) -> Node:
    for kid in kids:
        kid.relationship = "Member"
    total_rows = max(rows, sum(k.rows for k in kids))
    total = sum(k.total for k in kids) + total_rows * CPU_TUPLE_COST * 0.5
    width = max(k.width for k in kids)
    node = Node("Append", total_rows, width, kids[0].startup, total, children=kids)
    node.details.append(("Subplans Removed", 0))
    return node


def _actual(node: Node, rows: int) -> Actual:
    """Inclusive time of a node (DuckDB times each operator on its own)."""
    below = sum(k.actual.total_ms for k in node.children if k.actual is not None)
    blocking = node.node_type in ("Sort", "Aggregate", "Hash", "WindowAgg")
    total = below + node.self_ms
    return Actual(total if blocking else 0.0, total, rows)


def finish_actuals(node: Node) -> None:
    """Recompute inclusive times bottom-up once every folded operator added its own."""
    for kid in node.children:
        finish_actuals(kid)
    if node.actual is not None:
        removed, rows = node.actual.removed, node.actual.rows
        node.actual = _actual(node, rows)
        node.actual.removed = removed
