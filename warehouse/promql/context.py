"""What every translation step shares: the Context (plan, grid, query bounds, lookback), the
dispatch from a parse-tree node to its handler, and helpers for times and constant arguments.

Handlers register in `HANDLERS` (translate.py fills it), so the modules that translate one
kind of node import this module, never each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from warehouse.promql.plan import Grid, Plan, PromQLError, Scalar, Unsupported, Value, Vector

LOOKBACK_MS = 5 * 60 * 1000  # Prometheus's default lookback delta
MAX_DEPTH = 64


def ms(delta: Any) -> int:
    """A timedelta (offset, range, step) in whole milliseconds."""
    return round(delta.total_seconds() * 1000) if delta is not None else 0


@dataclass
class Context:
    """What a translation step needs besides the node: the plan, the grid it evaluates on
    and the query's own start and end (for `@ start()` / `@ end()`)."""

    plan: Plan
    grid: Grid
    query_start_ms: int
    query_end_ms: int
    lookback_ms: int = LOOKBACK_MS
    depth: int = field(default=0)

    def on(self, grid: Grid) -> Context:
        return Context(self.plan, grid, self.query_start_ms, self.query_end_ms, self.lookback_ms)

    def steps(self) -> str:
        """A CTE of every step index of this context's grid."""
        return self.plan.add("steps", f"SELECT range AS k FROM range(0, {self.grid.last + 1})")


#: node type name -> handler (translate.py registers them)
HANDLERS: dict[str, Callable[[Any, Context], Value]] = {}


def evaluate(node: Any, ctx: Context) -> Value:
    """The value of `node` on ctx's grid."""
    handler = HANDLERS.get(type(node).__name__)
    if handler is None:
        raise Unsupported(type(node).__name__)
    ctx.depth += 1
    if ctx.depth > MAX_DEPTH:
        raise PromQLError(f"the expression nests deeper than {MAX_DEPTH} levels")
    try:
        return handler(node, ctx)
    finally:
        ctx.depth -= 1


def at_ms(modifier: Any, ctx: Context) -> int | None:
    """The time an `@` modifier fixes, in ms, or None."""
    if modifier is None:
        return None
    kind = str(modifier.type).rsplit(".", 1)[-1]
    if kind == "Start":
        return ctx.query_start_ms
    if kind == "End":
        return ctx.query_end_ms
    return round(float(modifier.at.timestamp()) * 1000)


def spread(ctx: Context, inner: Callable[[Context], Vector], at: int | None) -> Vector:
    """`inner` on ctx's grid, or, with `@`, on a one-step grid at `at` spread over ctx's."""
    if at is None:
        return inner(ctx)
    once = inner(ctx.on(Grid(at, at, 1)))
    steps = ctx.steps()
    st = ", p.st" if once.sample_times else ""
    points = ctx.plan.add(
        "at", f"SELECT p.sid, s.k, p.v{st} FROM {once.points} p CROSS JOIN {steps} s"
    )
    return Vector(once.series, points, once.named, once.sample_times, once.metric)


def scalar_of(value: Value, what: str) -> Scalar:
    if not isinstance(value, Scalar):
        raise PromQLError(f"{what} must be a number")
    return value


def constant(value: Value, what: str) -> float:
    """A number argument that must not change over time (topk's k, quantile's φ, ...)."""
    number = scalar_of(value, what)
    if number.value is None:
        raise Unsupported(f"a computed {what}")
    return number.value
