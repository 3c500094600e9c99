"""The entry point: a PromQL expression and its times in, one SQL query and how to read its
rows out.

`instant` and `range_query` give a `Compiled`: the SQL (run by the caller, in the caller's
session, so roles, time limits and caps are the SQL faces' own) and the result type.
`render.py` turns its rows into Prometheus's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from warehouse.promql import native, source, translate
from warehouse.promql.context import LOOKBACK_MS, Context, evaluate, ms
from warehouse.promql.plan import Grid, Plan, PromQLError, Scalar, String, Vector, literal

MAX_POINTS = 11_000  # per series, as Prometheus refuses a finer range query


@dataclass(frozen=True)
class Compiled:
    """What to run and how to read it. A vector or matrix query's rows are
    (labels JSON, step indexes, values) per series, or for a raw matrix (labels JSON,
    sample times in ms, values); a scalar's (step index, value); a string's none."""

    sql: str
    kind: str  # vector | matrix | scalar | string: Prometheus's resultType
    grid: Grid
    raw: bool = False  # rows hold sample times (a range vector selector at an instant)
    text: str | None = None  # the value of a string result
    #: A matrix's rows as JSON text made by DuckDB: (labels JSON, the `values` array's
    #: points), so a large answer is not built point by point in Python (`render.data_json`)
    json_sql: str | None = None
    #: The same query for the fast path over decoded arrays (`native.py`), when it has one
    native: native.Native | None = None


def instant(expression: str, time_ms: int, lookback_ms: int = LOOKBACK_MS) -> Compiled:
    """`expression` evaluated at `time_ms` (`/api/v1/query`)."""
    tree = translate.parse(expression)
    grid = Grid(time_ms, time_ms, 1)
    if type(tree).__name__ == "MatrixSelector":
        return _raw_matrix(tree, grid)
    compiled = _compile(tree, grid, lookback_ms)
    order = _order(tree)
    if order and compiled.kind == "vector":
        return Compiled(compiled.sql.replace("ORDER BY labels", order), "vector", grid)
    fast = native.plan(tree, grid, lookback_ms, "vector")
    return compiled if fast is None else replace(compiled, native=fast)


def range_query(
    expression: str, start_ms: int, end_ms: int, step_ms: int, lookback_ms: int = LOOKBACK_MS
) -> Compiled:
    """`expression` evaluated at start, start + step, ... up to end (`/api/v1/query_range`)."""
    if step_ms <= 0:
        raise PromQLError(
            "zero or negative query resolution step widths are not accepted. Try a positive integer"
        )
    if end_ms < start_ms:
        raise PromQLError("end timestamp must not be before start time")
    if (end_ms - start_ms) // step_ms + 1 > MAX_POINTS:
        raise PromQLError(
            f"exceeded maximum resolution of {MAX_POINTS:,} points per timeseries. "
            "Try decreasing the query resolution (?step=XX)"
        )
    tree = translate.parse(expression)
    grid = Grid(start_ms, end_ms, step_ms)
    compiled = _compile(tree, grid, lookback_ms)
    if compiled.kind == "string":
        raise PromQLError(
            'invalid expression type "string" for range query, must be Scalar or instant Vector'
        )
    if compiled.kind == "scalar":  # a range query answers a scalar as one series, no labels
        sql = (
            f"SELECT '{{}}' AS labels, list(k ORDER BY k) AS ks, list(v ORDER BY k) AS vs "
            f"FROM ({compiled.sql})"
        )
        return Compiled(sql, "matrix", compiled.grid)
    fast = native.plan(tree, grid, lookback_ms, "matrix")
    return Compiled(compiled.sql, "matrix", grid, json_sql=compiled.json_sql, native=fast)


def _compile(tree: Any, grid: Grid, lookback_ms: int) -> Compiled:
    plan = Plan(grid)
    ctx = Context(plan, grid, grid.start_ms, grid.end_ms, lookback_ms)
    value = evaluate(tree, ctx)
    if isinstance(value, String):
        return Compiled("SELECT 1 WHERE false", "string", grid, text=value.value)
    if isinstance(value, Scalar):
        if value.value is not None:
            steps = plan.steps()
            return Compiled(
                plan.query(f"SELECT k, {literal(value.value)} AS v FROM {steps} ORDER BY k"),
                "scalar",
                grid,
            )
        return Compiled(plan.query(f"SELECT k, v FROM {value.points} ORDER BY k"), "scalar", grid)
    if not isinstance(value, Vector):
        raise PromQLError("the expression has no value")
    rows = plan.query(_series_rows(value, "list(p.k ORDER BY p.k) AS ks,\n  "
                                   "list(p.v ORDER BY p.k) AS vs"))  # fmt: skip
    return Compiled(rows, "vector", grid, json_sql=_json_rows(plan, value))


def _series_rows(value: Vector, columns: str) -> str:
    return (
        f"SELECT to_json(s.labels)::VARCHAR AS labels, {columns}\n"
        f"FROM {value.points} p JOIN {value.series} s USING (sid)\n"
        f"GROUP BY s.labels ORDER BY labels"  # one label set over steps is one series
    )


def _json_rows(plan: Plan, value: Vector) -> str:
    """(labels JSON, points JSON) per series. The points are joined into text per sid before
    the labels are looked at (grouping 10,000 ids, not millions of label maps); the few sids
    whose label set another sid shares are one series, their points merged in step order."""
    texts = plan.add(
        "text",
        f"SELECT sid, k, {_point_json(plan.grid)} AS pt\n"
        f"FROM (SELECT sid, k, v, CAST(v AS VARCHAR) AS d FROM {value.points}) p",
    )
    by_sid = plan.add(
        "bysid",
        f"SELECT b.sid, s.labels, b.points, count(*) OVER (PARTITION BY s.labels) AS n\n"
        f"FROM (SELECT sid, string_agg(pt, ',' ORDER BY k) AS points FROM {texts} GROUP BY sid) b\n"
        f"JOIN {value.series} s USING (sid)",
    )
    return plan.query(
        f"SELECT to_json(labels)::VARCHAR AS labels, points FROM {by_sid} WHERE n = 1\n"
        f"UNION ALL\n"
        f"SELECT to_json(s.labels)::VARCHAR, string_agg(t.pt, ',' ORDER BY t.k)\n"
        f"FROM {texts} t JOIN (SELECT sid, labels FROM {by_sid} WHERE n > 1) s USING (sid)\n"
        f"GROUP BY s.labels ORDER BY labels"
    )


def _point_json(grid: Grid) -> str:
    """`[<seconds>,"<value>"]` of a point p (k, v, d: v as DuckDB writes it), as Prometheus
    writes it: seconds a whole number
    when whole; the value as Go's FormatFloat(v, 'f', -1) except where DuckDB's shortest
    digits take an exponent (below 1e-4, from 1e16), which `render.data_json` rewrites."""
    if grid.start_ms % 1000 == 0 and grid.step_ms % 1000 == 0:
        at = f"CAST({grid.start_ms // 1000} + p.k * {grid.step_ms // 1000} AS VARCHAR)"
    else:
        t = grid.t("p.k")
        at = (
            f"CASE WHEN {t} % 1000 = 0 THEN CAST({t} // 1000 AS VARCHAR) "
            f"ELSE CAST({t} / 1000.0 AS VARCHAR) END"
        )
    value = (
        "CASE WHEN isnan(p.v) THEN 'NaN' WHEN isinf(p.v) THEN "
        "CASE WHEN p.v > 0 THEN '+Inf' ELSE '-Inf' END "
        "WHEN suffix(p.d, '.0') THEN p.d[:-3] ELSE p.d END"
    )
    return f"'[' || {at} || ',\"' || {value} || '\"]'"


def _order(tree: Any) -> str | None:
    """The ORDER BY of a top-level sort() / sort_desc(): NaN first, as Prometheus 2.42."""
    while type(tree).__name__ == "ParenExpr":
        tree = tree.expr
    if type(tree).__name__ != "Call" or tree.func.name not in ("sort", "sort_desc"):
        return None
    direction = "DESC" if tree.func.name == "sort_desc" else "ASC"
    return f"ORDER BY isnan(vs[1]) DESC, vs[1] {direction}, labels"


def _raw_matrix(node: Any, grid: Grid) -> Compiled:
    """A range vector selector at an instant: the raw samples of each series in
    [time - offset - range, time - offset], at their own times."""
    vs = node.vector_selector
    if vs.at is not None:
        raise PromQLError("@ on a range vector selector at the top of a query is not supported")
    hi = grid.start_ms - ms(vs.offset)
    lo = hi - ms(node.range)
    plan = Plan(grid)
    groups = source.matchers_of(vs)
    series, samples = source.selection(plan, groups, lo, hi)
    sql = plan.query(
        f"SELECT to_json(s.labels)::VARCHAR AS labels, list(p.ts ORDER BY p.ts) AS ks,\n"
        f"  list(p.v ORDER BY p.ts) AS vs\n"
        f"FROM {samples} p JOIN {series} s USING (sid) WHERE NOT p.stale\n"
        f"GROUP BY s.sid, s.labels ORDER BY labels"
    )
    return Compiled(sql, "matrix", grid, raw=True)
