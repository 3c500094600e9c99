"""The walk over a parsed PromQL expression: each node becomes CTEs of the plan.

Selectors read `source.py`; calls go to `functions.py` (instant vectors) or `ranges.py` (range
vectors); aggregations to `aggregate.py`; operators to `binary.py`. `@` evaluates its operand on
a one-step grid at that time and spreads the result over every step.
"""

from __future__ import annotations

from typing import Any

import promql_parser as pp

from warehouse.promql import source
from warehouse.promql.aggregate import aggregate
from warehouse.promql.binary import binary
from warehouse.promql.context import HANDLERS, Context, at_ms, evaluate, ms, spread
from warehouse.promql.functions import call
from warehouse.promql.labels import drop_name
from warehouse.promql.plan import PromQLError, Scalar, String, Unsupported, Value, Vector


def _number(node: Any, ctx: Context) -> Value:
    return Scalar(value=float(node.val))


def _string(node: Any, ctx: Context) -> Value:
    return String(str(node.val))


def _paren(node: Any, ctx: Context) -> Value:
    return evaluate(node.expr, ctx)


def _unary(node: Any, ctx: Context) -> Value:
    inner = evaluate(node.expr, ctx)
    if isinstance(inner, Scalar):
        if inner.value is not None:
            return Scalar(value=-inner.value)
        return Scalar(ctx.plan.add("neg", f"SELECT k, -v AS v FROM {inner.points}"))
    if isinstance(inner, Vector):
        series = drop_name(ctx.plan, inner)
        points = ctx.plan.add("neg", f"SELECT sid, k, -v AS v FROM {inner.points}")
        return Vector(series, points, named=False)
    raise PromQLError("unary minus needs a number or an instant vector")


def _vector_selector(node: Any, ctx: Context) -> Value:
    groups = source.matchers_of(node)
    offset = ms(node.offset)

    def inner(c: Context) -> Vector:
        g = c.grid
        lo = g.start_ms - offset - c.lookback_ms
        hi = g.end_ms - offset
        series, samples = source.selection(c.plan, groups, lo, hi)
        return Vector(
            series, _instant_points(c, samples, offset), True, True, source.metric_of(groups)
        )

    return spread(ctx, inner, at_ms(node.at, ctx))


#: One step, and steps a lookback or more apart, take their points by GROUP BY
#: (`_one_instant_points`, `_sparse_instant_points`); off, every grid spreads samples over
#: steps (the tests compare the two).
SPARSE_INSTANTS = True


def _instant_points(ctx: Context, samples: str, offset: int) -> str:
    """Each sample stands for the steps whose reference time (step - offset) falls in
    [its time, its time + lookback] and before the series' next sample; a staleness marker
    stands for none (the series ended)."""
    g = ctx.grid
    if SPARSE_INSTANTS and g.last == 0:
        return _one_instant_points(ctx, samples, offset)
    if SPARSE_INSTANTS and g.step_ms >= ctx.lookback_ms:
        return _sparse_instant_points(ctx, samples, offset)
    lookback = ctx.lookback_ms
    upto = f"least(coalesce(nx - 1, ts + {lookback}), ts + {lookback})"
    return ctx.plan.add(
        "instant",
        f"SELECT sid, unnest(range(lo_k, hi_k + 1)) AS k, v, ts AS st FROM (\n"
        f"  SELECT sid, ts, v,\n"
        f"    greatest(0, ceil((ts + {offset} - {g.start_ms}) / {g.step_ms})::BIGINT) AS lo_k,\n"
        f"    least({g.last}, floor(({upto} + {offset} - {g.start_ms}) / {g.step_ms})::BIGINT)"
        f" AS hi_k\n"
        f"  FROM (SELECT *, lead(ts) OVER (PARTITION BY sid ORDER BY ts) AS nx FROM {samples})\n"
        f"  WHERE NOT stale\n"
        f") WHERE lo_k <= hi_k",
    )


def _one_instant_points(ctx: Context, samples: str, offset: int) -> str:
    """The same point for a grid of one step (an instant query, a rule): each series' latest
    sample in the lookback, unless it is a staleness marker."""
    t = ctx.grid.start_ms - offset
    return ctx.plan.add(
        "instant",
        f"SELECT sid, 0::BIGINT AS k, v, st FROM (\n"
        f"  SELECT sid, arg_max_null(CASE WHEN stale THEN NULL ELSE v END, ts) AS v,"
        f" max(ts) AS st\n"
        f"  FROM {samples} WHERE ts <= {t} AND ts >= {t - ctx.lookback_ms}\n"
        f"  GROUP BY sid\n) WHERE v IS NOT NULL",
    )


def _sparse_instant_points(ctx: Context, samples: str, offset: int) -> str:
    """The same points when steps are at least the lookback apart. A sample then lies in the
    lookback of the first step at or after it, and of the next one only when the lookback
    equals the step and it sits exactly on a step. So each step's point is the latest sample
    of its bucket (the samples since the step before), a GROUP BY instead of a sort of every
    series' samples; with a lookback of one step, a bucket with nothing newer takes the
    previous bucket's latest when that sits on its step. A staleness marker that is the
    latest leaves the step without a point."""
    g = ctx.grid
    reference = f"{g.t('k')} - {offset}"
    latest = ctx.plan.add(
        "latest",
        f"SELECT sid, k, arg_max_null(v, ts) AS v, max(ts) AS st FROM (\n"
        f"  SELECT sid, ts, CASE WHEN stale THEN NULL ELSE v END AS v,\n"
        f"    ceil((ts + {offset} - {g.start_ms}) / {g.step_ms})::BIGINT AS k\n"
        f"  FROM {samples}\n"
        f") WHERE k BETWEEN -1 AND {g.last} AND {reference} - ts <= {ctx.lookback_ms}\n"
        f"GROUP BY sid, k",
    )
    if g.step_ms > ctx.lookback_ms:
        points = f"SELECT sid, k, v, st FROM {latest} WHERE k >= 0"
    else:
        points = (
            f"SELECT sid, k, v, st FROM {latest} WHERE k >= 0\n"
            f"UNION ALL\n"
            f"SELECT c.sid, c.k + 1, c.v, c.st FROM {latest} c\n"
            f"WHERE c.st = {g.t('c.k')} - {offset} AND c.k < {g.last} AND NOT EXISTS (\n"
            f"  SELECT 1 FROM {latest} n WHERE n.sid = c.sid AND n.k = c.k + 1)"
        )
    return ctx.plan.add("instant", f"SELECT sid, k, v, st FROM ({points}) WHERE v IS NOT NULL")


def _matrix(node: Any, ctx: Context) -> Value:
    raise Unsupported("a range vector as the result of a query (give it to a function)")


def _subquery(node: Any, ctx: Context) -> Value:
    raise Unsupported("a subquery outside a range function")


HANDLERS.update(
    {
        "NumberLiteral": _number,
        "StringLiteral": _string,
        "ParenExpr": _paren,
        "UnaryExpr": _unary,
        "VectorSelector": _vector_selector,
        "MatrixSelector": _matrix,
        "SubqueryExpr": _subquery,
        "Call": call,
        "AggregateExpr": aggregate,
        "BinaryExpr": binary,
    }
)


def parse(expression: str) -> Any:
    """The parse tree of `expression`; a bad_data error saying where it went wrong."""
    if not expression.strip():
        raise PromQLError("the query is empty")
    try:
        return pp.parse(expression)
    except (ValueError, RuntimeError) as error:
        raise PromQLError(f"parse error: {error}") from None
