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

The nodes and their costs are made in `compat.plan_ops`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.pgwire.compat import plan_ops as ops
from service.pgwire.compat.plan_nodes import (
    CPU_OPERATOR_COST,
    CPU_TUPLE_COST,
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


def _cardinality(info: Mapping[str, Any]) -> float:
    try:
        return max(1.0, float(info.get("Estimated Cardinality") or 1))
    except ValueError:
        return 1.0


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
        return ops.aggregate(info, rows, kids, hashed=True)
    if name in ("UNGROUPED_AGGREGATE", "SIMPLE_AGGREGATE"):
        return ops.aggregate(info, 1.0, kids, hashed=False)
    if name in _HASH_JOINS and len(kids) == 2:
        return ops.hash_join(info, rows, kids)
    if name in ("NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN", "CROSS_PRODUCT", "POSITIONAL_SCAN"):
        return ops.join("Nested Loop", "Join Filter", info, rows, kids)
    if name in ("PIECEWISE_MERGE_JOIN", "IE_JOIN", "ASOF_JOIN", "MERGE_JOIN"):
        return ops.join("Merge Join", "Merge Cond", info, rows, kids)
    if name == "UNION":
        return ops.append(kids, rows)
    if name in ("CTE", "MATERIALIZED_CTE") and len(kids) == 2:
        return ops.with_init_plan(info, *kids)
    if name in ("INSERT", "UPDATE", "DELETE", "BATCH_INSERT", "MERGE_INTO"):
        operation = name.split("_")[-1].title()
        return ops.generic("ModifyTable", rows, kids, {"Operation": operation}, label=operation)
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
        return ops.seq_scan(info, rows, tables, op)
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
    return ops.generic(name.replace("_", " ").title(), rows, [], {})


def _folded(
    name: str, info: Mapping[str, Any], rows: float, child: Node, op: Mapping[str, Any]
) -> Node:
    """Operators PostgreSQL has no node for: they become part of the node under them."""
    if name == "PROJECTION":
        child.columns = [
            ops.resolve(p, child.columns) for p in ops.as_list(info.get("Projections"))
        ]
    elif name == "FILTER":
        return ops.fold_filter(child, info, rows, op)
    return child


def _ordering(name: str, info: Mapping[str, Any], rows: float, kids: list[Node]) -> Node:
    """Sort, Limit and WindowAgg: nodes over one input, in its order or ordering it."""
    child = kids[0]
    keys = [ops.resolve(k, child.columns) for k in ops.as_list(info.get("Order By"))]
    if name == "ORDER_BY":
        return ops.sort(child, keys, child.rows)
    if name == "TOP_N":
        limit = float(info.get("Top") or rows)
        return ops.limit(ops.sort(child, keys, limit), limit)
    if name in ("LIMIT", "STREAMING_LIMIT", "LIMIT_PERCENT"):
        try:
            limit = float(info.get("Limit") or child.rows)
        except ValueError:
            limit = child.rows
        return ops.limit(child, limit)
    if name in ("WINDOW", "STREAMING_WINDOW"):
        functions = max(1, len(ops.as_list(info.get("Projections"))))
        total = child.total + child.rows * CPU_OPERATOR_COST * functions
        node = Node("WindowAgg", child.rows, child.width + 8 * functions, child.startup, total)
        node.children = [child]
        return node
    return ops.generic(name.replace("_", " ").title(), rows, kids, {})


def finish_actuals(node: Node) -> None:
    """Recompute inclusive times bottom-up once every folded operator added its own."""
    for kid in node.children:
        finish_actuals(kid)
    if node.actual is not None:
        removed, rows = node.actual.removed, node.actual.rows
        node.actual = ops.actual(node, rows)
        node.actual.removed = removed
