"""Functions over range vectors (`rate(x[5m])`, `max_over_time(...)`, subqueries).

A sample at time ts lies in the window of every step whose reference time (step - offset) is
in [ts, ts + range] — both ends closed, as in Prometheus 2.42 — so the samples are spread over
their windows once (`windows`) and each function is a GROUP BY (series, step) over them. A
subquery's inner result, evaluated on its own step-aligned grid, stands in for samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from warehouse.promql import buckets, source
from warehouse.promql.context import Context, at_ms, evaluate, ms, spread
from warehouse.promql.labels import drop_name
from warehouse.promql.plan import Grid, PromQLError, Unsupported, Vector, literal

DEFAULT_SUBQUERY_STEP_MS = 60_000  # Prometheus's default evaluation interval


@dataclass(frozen=True)
class Window:
    """Samples spread over windows: `rows` a CTE (sid, k, ts, v, pv, pts), pv/pts the
    series' previous sample."""

    series: str
    rows: str
    range_ms: int
    offset_ms: int
    metric: str | None


def _spread_samples(ctx: Context, samples: str, range_ms: int, offset: int) -> str:
    g = ctx.grid
    return ctx.plan.add(
        "window",
        f"SELECT sid, unnest(range(lo_k, hi_k + 1)) AS k, ts, v, pv, pts FROM (\n"
        f"  SELECT sid, ts, v, pv, pts,\n"
        f"    greatest(0, ceil((ts + {offset} - {g.start_ms}) / {g.step_ms})::BIGINT) AS lo_k,\n"
        f"    least({g.last}, floor((ts + {range_ms + offset} - {g.start_ms}) / {g.step_ms})"
        f"::BIGINT) AS hi_k\n"
        f"  FROM (SELECT sid, ts, v, lag(v) OVER w AS pv, lag(ts) OVER w AS pts\n"
        f"        FROM {samples} WHERE NOT stale WINDOW w AS (PARTITION BY sid ORDER BY ts))\n"
        f") WHERE lo_k <= hi_k",
    )


def _selector_window(node: Any, ctx: Context) -> Window:
    vs = node.vector_selector
    range_ms, offset = ms(node.range), ms(vs.offset)
    groups = source.matchers_of(vs)
    lo, hi = ctx.grid.start_ms - offset - range_ms, ctx.grid.end_ms - offset
    series, samples = source.selection(ctx.plan, groups, lo, hi)
    rows = _spread_samples(ctx, samples, range_ms, offset)
    return Window(series, rows, range_ms, offset, source.metric_of(groups))


def _subquery_window(node: Any, ctx: Context) -> Window:
    range_ms, offset = ms(node.range), ms(node.offset)
    step = ms(node.step) or DEFAULT_SUBQUERY_STEP_MS
    if step <= 0:
        raise PromQLError("a subquery's step must be positive")
    first = ctx.grid.start_ms - offset - range_ms
    start = step * (first // step)
    if start < first:
        start += step
    end = ctx.grid.end_ms - offset
    if end < start:
        end = start
    inner = evaluate(node.expr, ctx.on(Grid(start, end, step)))
    if not isinstance(inner, Vector):
        raise PromQLError("a subquery needs an instant vector inside")
    samples = ctx.plan.add(
        "subsamples",
        f"SELECT sid, {start} + k * {step} AS ts, v, false AS stale FROM {inner.points}",
    )
    rows = _spread_samples(ctx, samples, range_ms, offset)
    return Window(inner.series, rows, range_ms, offset, inner.metric if inner.named else None)


def window_of(node: Any, ctx: Context) -> Window:
    kind = type(node).__name__
    if kind == "MatrixSelector":
        return _selector_window(node, ctx)
    if kind == "SubqueryExpr":
        return _subquery_window(node, ctx)
    if kind == "ParenExpr":
        return window_of(node.expr, ctx)
    raise PromQLError(f"expected a range vector, got {kind}")


def _at_of(node: Any) -> Any:
    kind = type(node).__name__
    if kind == "MatrixSelector":
        return node.vector_selector.at
    if kind == "SubqueryExpr":
        return node.at
    if kind == "ParenExpr":
        return _at_of(node.expr)
    return None


# The window's reference end (step - offset) and start (end - range), in ms.
_END = "({s} + k * {p} - {o})"
_START = "({s} + k * {p} - {o} - {r})"

_FIRST_LAST = (
    "count(*) AS n, min(ts) AS t0, max(ts) AS t1, arg_min(v, ts) AS v0, arg_max(v, ts) AS v1"
)
_CORR = "CASE WHEN v < pv AND NOT isnan(v) AND NOT isnan(pv) THEN pv ELSE 0 END"


def _rate_sql(counter: bool, per_second: bool) -> tuple[str, str, str]:
    """Prometheus's extrapolatedRate over (n, t0, t1, v0, v1[, corr]) of a window."""
    aggs = _FIRST_LAST + (f", sum({_CORR}) - arg_min({_CORR}, ts) AS corr" if counter else "")
    result = "(v1 - v0 + corr)" if counter else "(v1 - v0)"
    sampled = "((t1 - t0) / 1000.0)"
    average = f"({sampled} / (n - 1))"
    to_start = "((t0 - {start}) / 1000.0)"
    if counter:
        zero = f"({sampled} * (v0 / {result}))"
        to_start = (
            f"(CASE WHEN {result} > 0 AND v0 >= 0 AND {zero} < {to_start} THEN {zero} "
            f"ELSE {to_start} END)"
        )
    to_end = "(({end} - t1) / 1000.0)"
    threshold = f"({average} * 1.1)"
    extend = (
        f"({sampled} + CASE WHEN {to_start} < {threshold} THEN {to_start} ELSE {average} / 2 END"
        f" + CASE WHEN {to_end} < {threshold} THEN {to_end} ELSE {average} / 2 END)"
    )
    value = f"{result} * ({extend} / {sampled})" + (" / {range_s}" if per_second else "")
    return aggs, value, "n >= 2 AND t1 > t0"


_LAST_TWO = "max(ts) AS t1, arg_max(v, ts) AS v1, arg_max(pv, ts) AS pv1, arg_max(pts, ts) AS pt1"
_CHANGED = "CASE WHEN v <> pv AND NOT (isnan(v) AND isnan(pv)) THEN 1 ELSE 0 END"
_RESET = "CASE WHEN v < pv AND NOT isnan(v) AND NOT isnan(pv) THEN 1 ELSE 0 END"
_LAST_TWO_WHERE = "pt1 IS NOT NULL AND pt1 >= {start} AND t1 > pt1"


def _nan_aware(fn: str) -> str:
    """min/max that skip NaN unless every value is NaN (Prometheus's comparison rule)."""
    return f"coalesce({fn}(v) FILTER (WHERE NOT isnan(v)), {fn}(v)) AS x"


# name -> (aggregates, value over them, condition): {start}, {end}, {range_s}, {t} filled in
FUNCTIONS: dict[str, tuple[str, str, str]] = {
    "rate": _rate_sql(counter=True, per_second=True),
    "increase": _rate_sql(counter=True, per_second=False),
    "delta": _rate_sql(counter=False, per_second=False),
    "irate": (
        _LAST_TWO,
        "CASE WHEN v1 < pv1 THEN v1 ELSE v1 - pv1 END / ((t1 - pt1) / 1000.0)",
        _LAST_TWO_WHERE,
    ),
    "idelta": (_LAST_TWO, "v1 - pv1", _LAST_TWO_WHERE),
    "resets": (f"sum({_RESET}) - arg_min({_RESET}, ts) AS x", "x::DOUBLE", "true"),
    "changes": (f"sum({_CHANGED}) - arg_min({_CHANGED}, ts) AS x", "x::DOUBLE", "true"),
    "count_over_time": ("count(*) AS x", "x::DOUBLE", "true"),
    "sum_over_time": ("sum(v) AS x", "x", "true"),
    "avg_over_time": ("avg(v) AS x", "x", "true"),
    "min_over_time": (_nan_aware("min"), "x", "true"),
    "max_over_time": (_nan_aware("max"), "x", "true"),
    "last_over_time": ("arg_max(v, ts) AS x", "x", "true"),
    "present_over_time": ("count(*) AS x", "1.0::DOUBLE", "true"),
    "stddev_over_time": ("stddev_pop(v) AS x", "x", "true"),
    "stdvar_over_time": ("var_pop(v) AS x", "x", "true"),
    "deriv": (
        "count(*) AS n, regr_slope(v, (ts - {t}) / 1000.0) AS x",
        "x",
        "n >= 2",
    ),
}


def range_function(name: str, args: list[Any], ctx: Context, extra: list[float]) -> Vector:
    """`name(args...)` where one argument is a range vector; `extra` the number arguments."""
    matrix = next(a for a in args if type(a).__name__ in _RANGE_KINDS or _is_range(a))

    def inner(c: Context) -> Vector:
        if _bucketed(name, matrix, c):
            return _by_buckets(name, matrix, c)
        window = window_of(matrix, c)
        return _apply(name, window, c, extra)

    return spread(ctx, inner, _at_value(matrix, ctx))


_RANGE_KINDS = ("MatrixSelector", "SubqueryExpr")


def _is_range(node: Any) -> bool:
    return type(node).__name__ == "ParenExpr" and _is_range_kind(node.expr)


def _is_range_kind(node: Any) -> bool:
    return type(node).__name__ in _RANGE_KINDS or _is_range(node)


def _at_value(matrix: Any, ctx: Context) -> int | None:
    return at_ms(_at_of(matrix), ctx)


def _selector_of(node: Any) -> Any:
    """The matrix selector `node` is, through parentheses; None for a subquery."""
    kind = type(node).__name__
    if kind == "ParenExpr":
        return _selector_of(node.expr)
    return node if kind == "MatrixSelector" else None


def _bucketed(name: str, matrix: Any, ctx: Context) -> bool:
    node = _selector_of(matrix)
    return node is not None and buckets.applies(name, ms(node.range), ctx.grid)


def _by_buckets(name: str, matrix: Any, ctx: Context) -> Vector:
    """`name` over a selector's windows by step buckets (`warehouse.promql.buckets`)."""
    node = _selector_of(matrix)
    vs = node.vector_selector
    range_ms, offset = ms(node.range), ms(vs.offset)
    groups = source.matchers_of(vs)
    lo, hi = ctx.grid.start_ms - offset - range_ms, ctx.grid.end_ms - offset
    series, samples = source.selection(ctx.plan, groups, lo, hi)
    points = buckets.points(ctx, samples, name, range_ms, offset)
    vector = Vector(series, points, True, False, source.metric_of(groups))
    if name == "last_over_time":
        return vector
    return Vector(drop_name(ctx.plan, vector), points, named=False)


def _apply(name: str, w: Window, ctx: Context, extra: list[float]) -> Vector:
    g = ctx.grid
    fill = {
        "start": _START.format(s=g.start_ms, p=g.step_ms, o=w.offset_ms, r=w.range_ms),
        "end": _END.format(s=g.start_ms, p=g.step_ms, o=w.offset_ms),
        "t": g.t(),
        "range_s": literal(w.range_ms / 1000),
    }
    if name == "quantile_over_time":
        aggs, value, where = _quantile(extra[0])
    elif name == "predict_linear":
        aggs, value, where = _predict(extra[0], fill["t"])
    elif name in FUNCTIONS:
        aggs, value, where = FUNCTIONS[name]
    else:
        raise Unsupported(f"the function {name}()")
    points = ctx.plan.add(
        name,
        f"SELECT sid, k, {value.format(**fill)} AS v FROM (\n"
        f"  SELECT sid, k, {aggs.format(**fill)} FROM {w.rows} GROUP BY sid, k\n"
        f") WHERE {where.format(**fill)}",
    )
    vector = Vector(w.series, points, True, False, w.metric)
    if name == "last_over_time":
        return vector
    return Vector(drop_name(ctx.plan, vector), points, named=False)


def _quantile(q: float) -> tuple[str, str, str]:
    if q != q:
        return "count(*) AS n", "'NaN'::DOUBLE", "true"
    if q < 0 or q > 1:
        return "count(*) AS n", literal(float("inf") if q > 1 else float("-inf")), "true"
    return f"quantile_cont(v, {q!r}) AS x", "x", "true"


def _predict(seconds: float, t: str) -> tuple[str, str, str]:
    aggs = (
        "count(*) AS n, regr_slope(v, (ts - {t}) / 1000.0) AS slope, "
        "regr_intercept(v, (ts - {t}) / 1000.0) AS icpt"
    ).replace("{t}", t)
    return aggs, f"icpt + slope * {literal(seconds)}", "n >= 2"
