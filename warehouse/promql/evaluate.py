"""The entry point: a PromQL expression and its times in, one SQL query and how to read its
rows out.

`instant` and `range_query` give a `Compiled`: the SQL (run by the caller, in the caller's
session, so roles, time limits and caps are the SQL faces' own) and the result type.
`render.py` turns its rows into Prometheus's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from warehouse.promql import source, translate
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
    return compiled


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
    compiled = _compile(tree, Grid(start_ms, end_ms, step_ms), lookback_ms)
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
    return Compiled(compiled.sql, "matrix", compiled.grid)


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
    return Compiled(plan.query(_series_rows(value)), "vector", grid)


def _series_rows(value: Vector) -> str:
    return (
        f"SELECT to_json(s.labels)::VARCHAR AS labels, list(p.k ORDER BY p.k) AS ks,\n"
        f"  list(p.v ORDER BY p.k) AS vs\n"
        f"FROM {value.points} p JOIN {value.series} s USING (sid)\n"
        f"GROUP BY s.labels ORDER BY labels"  # one label set over steps is one series
    )


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
    series = source.select(plan, groups, lo, hi)
    samples = source.samples(plan, series, lo, hi)
    sql = plan.query(
        f"SELECT to_json(s.labels)::VARCHAR AS labels, list(p.ts ORDER BY p.ts) AS ks,\n"
        f"  list(p.v ORDER BY p.ts) AS vs\n"
        f"FROM {samples} p JOIN {series} s USING (sid) WHERE NOT p.stale\n"
        f"GROUP BY s.sid, s.labels ORDER BY labels"
    )
    return Compiled(sql, "matrix", grid, raw=True)
