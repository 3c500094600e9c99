"""Aggregations (`sum by (gpu) (...)`, `topk(3, ...)`, ...): the groups are worked out on the
series (each series' grouping labels, the group named by its smallest sid), the values are one
GROUP BY (group, step) over the points."""

from __future__ import annotations

from typing import Any

from warehouse.promql import labels as lab
from warehouse.promql.context import Context, constant, evaluate
from warehouse.promql.plan import PromQLError, Unsupported, Value, Vector, literal

_NAN_LAST = "CASE WHEN isnan(p.v) THEN 1 ELSE 0 END"


def _nan_aware(fn: str) -> str:
    return f"coalesce({fn}(p.v) FILTER (WHERE NOT isnan(p.v)), {fn}(p.v))"


AGGREGATES: dict[str, str] = {
    "sum": "sum(p.v)",
    "avg": "avg(p.v)",
    "count": "count(*)::DOUBLE",
    "group": "1.0::DOUBLE",
    "min": _nan_aware("min"),
    "max": _nan_aware("max"),
    "stddev": "stddev_pop(p.v)",
    "stdvar": "var_pop(p.v)",
}


def _grouping(node: Any) -> str:
    modifier = node.modifier
    if modifier is None:
        return "MAP {}::MAP(VARCHAR, VARCHAR)"
    names = list(modifier.labels)
    if str(modifier.type).endswith("Without"):
        return lab.without(names)
    return lab.keep(names)


def aggregate(node: Any, ctx: Context) -> Value:
    op = str(node.op)
    inner = evaluate(node.expr, ctx)
    if not isinstance(inner, Vector):
        raise PromQLError(f"{op}() needs an instant vector")
    groups = ctx.plan.add(
        "groups",
        f"SELECT sid, min(sid) OVER (PARTITION BY g) AS gid, g AS labels\n"
        f"FROM (SELECT sid, {_grouping(node)} AS g FROM {inner.series})",
    )
    if op in ("topk", "bottomk"):
        k = constant(evaluate(node.param, ctx), f"{op}'s k")
        return _top(op, k, inner, groups, ctx)
    if op == "quantile":
        q = constant(evaluate(node.param, ctx), "quantile's φ")
        value = _quantile(q)
    elif op in AGGREGATES:
        value = AGGREGATES[op]
    else:
        raise Unsupported(f"the aggregation {op}")
    series = ctx.plan.add("series", f"SELECT DISTINCT gid AS sid, labels FROM {groups}")
    points = ctx.plan.add(
        op,
        f"SELECT g.gid AS sid, p.k, {value} AS v\n"
        f"FROM {inner.points} p JOIN {groups} g USING (sid) GROUP BY g.gid, p.k",
    )
    return Vector(series, points, named=False)


def _quantile(q: float) -> str:
    if q != q:
        return "'NaN'::DOUBLE"
    if q < 0 or q > 1:
        return literal(float("inf") if q > 1 else float("-inf"))
    return f"quantile_cont(p.v, {q!r})"


def _top(op: str, k: float, inner: Vector, groups: str, ctx: Context) -> Vector:
    """The k largest (smallest) values of each group at each step, series as they were."""
    order = "p.v DESC" if op == "topk" else "p.v ASC"
    limit = int(k) if k == k and abs(k) < 2**62 else 0
    points = ctx.plan.add(
        op,
        f"SELECT sid, k, v FROM (\n"
        f"  SELECT p.sid, p.k, p.v, row_number() OVER (\n"
        f"    PARTITION BY g.gid, p.k ORDER BY {_NAN_LAST}, {order}, p.sid) AS rank\n"
        f"  FROM {inner.points} p JOIN {groups} g USING (sid)\n"
        f") WHERE rank <= {limit}",
    )
    return Vector(inner.series, points, inner.named, False, inner.metric)
