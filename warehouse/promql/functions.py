"""PromQL function calls: range functions go to `ranges.py`; the rest are SQL expressions over
an instant vector's values, label rewrites over its series, or scalars over the steps.

DuckDB and Go differ on NaN (DuckDB orders it above every number, Go compares it false) and on
a few domain errors (`%` by zero raises in DuckDB): each expression here says what Go says.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from warehouse.promql import labels as lab
from warehouse.promql import ranges, source
from warehouse.promql.context import Context, constant, evaluate
from warehouse.promql.plan import (
    PromQLError,
    Scalar,
    String,
    Unsupported,
    Value,
    Vector,
    literal,
    text,
)

NAN = "'NaN'::DOUBLE"
NO_LABELS = "SELECT 0::BIGINT AS sid, MAP {}::MAP(VARCHAR, VARCHAR) AS labels"

#: name -> SQL over `v` (the sample's value); every one drops __name__.
MATH: dict[str, str] = {
    "abs": "abs(v)",
    "ceil": "ceil(v)",
    "floor": "floor(v)",
    "exp": "exp(v)",
    "sqrt": "sqrt(v)",
    "ln": f"CASE WHEN v = 0 THEN '-Infinity'::DOUBLE WHEN v < 0 THEN {NAN} ELSE ln(v) END",
    "log2": f"CASE WHEN v = 0 THEN '-Infinity'::DOUBLE WHEN v < 0 THEN {NAN} ELSE log2(v) END",
    "log10": f"CASE WHEN v = 0 THEN '-Infinity'::DOUBLE WHEN v < 0 THEN {NAN} ELSE log10(v) END",
    "sgn": "CASE WHEN isnan(v) THEN v WHEN v > 0 THEN 1.0 WHEN v < 0 THEN -1.0 ELSE v END",
    "deg": "v * 180 / pi()",
    "rad": "v * pi() / 180",
    **{name: f"{name}(v)" for name in ("acos", "asin", "atan", "cos", "sin", "tan")},
    **{name: f"{name}(v)" for name in ("acosh", "asinh", "atanh", "cosh", "sinh", "tanh")},
}

#: name -> the SQL of a calendar field of `x`, a TIMESTAMPTZ (UTC, as Prometheus).
CALENDAR: dict[str, str] = {
    "minute": "minute(x)",
    "hour": "hour(x)",
    "day_of_month": "day(x)",
    "day_of_week": "dayofweek(x)",
    "day_of_year": "dayofyear(x)",
    "month": "month(x)",
    "year": "year(x)",
    "days_in_month": "day(last_day(x))",
}


def call(node: Any, ctx: Context) -> Value:
    name = node.func.name
    arg_kinds = [str(kind).rsplit(".", 1)[-1] for kind in node.func.arg_types]
    if "Matrix" in arg_kinds:
        return _range_call(name, node.args, ctx)
    handler = _CALLS.get(name)
    if handler is not None:
        return handler(node.args, ctx)
    if name in MATH:
        return _map_values(_vector_arg(node.args, 0, ctx, name), MATH[name], ctx)
    if name in CALENDAR:
        return _calendar(name, node.args, ctx)
    raise Unsupported(f"the function {name}()")


def _range_call(name: str, args: list[Any], ctx: Context) -> Value:
    if name == "absent_over_time":
        return _absent(
            args[0].vector_selector if hasattr(args[0], "vector_selector") else None,
            evaluate_range_presence(args, ctx),
            ctx,
        )
    numbers = [
        constant(evaluate(a, ctx), f"the number argument of {name}()")
        for a in args
        if type(a).__name__ in ("NumberLiteral", "UnaryExpr", "ParenExpr")
        and not ranges._is_range_kind(a)
    ]
    return ranges.range_function(name, args, ctx, numbers)


def evaluate_range_presence(args: list[Any], ctx: Context) -> Vector:
    return ranges.range_function("present_over_time", args, ctx, [])


def _vector_arg(args: list[Any], at: int, ctx: Context, name: str) -> Vector:
    value = evaluate(args[at], ctx)
    if not isinstance(value, Vector):
        raise PromQLError(f"{name}() needs an instant vector")
    return value


def _map_values(vector: Vector, expression: str, ctx: Context) -> Vector:
    """Each value through `expression` (over `v`), `__name__` dropped."""
    points = ctx.plan.add("fn", f"SELECT sid, k, {expression} AS v FROM {vector.points}")
    series = lab.drop_name(ctx.plan, vector)
    return Vector(series, points, named=False)


def _round(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "round")
    nearest = constant(evaluate(args[1], ctx), "round's to_nearest") if len(args) > 1 else 1.0
    inverse = 1.0 / nearest if nearest else float("inf")
    return _map_values(vector, f"floor(v * {literal(inverse)} + 0.5) / {literal(inverse)}", ctx)


def _clamp(lo: float | None, hi: float | None, vector: Vector, ctx: Context) -> Value:
    if lo is not None and hi is not None and hi < lo:
        empty = ctx.plan.add("fn", f"SELECT sid, k, v FROM {vector.points} WHERE false")
        return Vector(lab.drop_name(ctx.plan, vector), empty, named=False)
    value = "v"
    if hi is not None:
        value = f"least({literal(hi)}, {value})" if hi == hi else NAN
    if lo is not None:
        value = f"greatest({literal(lo)}, {value})" if lo == lo else NAN
    return _map_values(vector, f"CASE WHEN isnan(v) THEN v ELSE {value} END", ctx)


def _clamp_call(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "clamp")
    lo = constant(evaluate(args[1], ctx), "clamp's min")
    hi = constant(evaluate(args[2], ctx), "clamp's max")
    return _clamp(lo, hi, vector, ctx)


def _clamp_min(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "clamp_min")
    return _clamp(constant(evaluate(args[1], ctx), "clamp_min's min"), None, vector, ctx)


def _clamp_max(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "clamp_max")
    return _clamp(None, constant(evaluate(args[1], ctx), "clamp_max's max"), vector, ctx)


def _timestamp(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "timestamp")
    when = "st" if vector.sample_times else ctx.grid.t()
    return _map_values(vector, f"{when} / 1000.0", ctx)


def _time(args: list[Any], ctx: Context) -> Value:
    steps = ctx.steps()
    return Scalar(ctx.plan.add("time", f"SELECT k, {ctx.grid.t()} / 1000.0 AS v FROM {steps}"))


def _vector(args: list[Any], ctx: Context) -> Value:
    value = evaluate(args[0], ctx)
    if not isinstance(value, Scalar):
        raise PromQLError("vector() needs a number")
    steps = ctx.steps()
    series = ctx.plan.add("series", NO_LABELS)
    if value.value is not None:
        points = ctx.plan.add("vec", f"SELECT 0::BIGINT AS sid, k, {value.sql()} AS v FROM {steps}")
    else:
        points = ctx.plan.add("vec", f"SELECT 0::BIGINT AS sid, k, v FROM {value.points}")
    return Vector(series, points, named=False)


def _scalar(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "scalar")
    steps = ctx.steps()
    return Scalar(
        ctx.plan.add(
            "scalar",
            f"SELECT s.k, CASE WHEN count(p.v) = 1 THEN any_value(p.v) ELSE {NAN} END AS v\n"
            f"FROM {steps} s LEFT JOIN {vector.points} p USING (k) GROUP BY s.k",
        )
    )


def _absent_call(args: list[Any], ctx: Context) -> Value:
    node = args[0]
    return _absent(
        node if type(node).__name__ == "VectorSelector" else None,
        _vector_arg(args, 0, ctx, "absent"),
        ctx,
    )


def _absent(selector: Any, vector: Vector, ctx: Context) -> Value:
    """1 at the steps where `vector` has no sample, labelled with the selector's equality
    matchers (as Prometheus's createLabelsForAbsentFunction)."""
    pairs: dict[str, str] = {}
    if selector is not None:
        groups = source.matchers_of(selector)
        names = [name for group in groups for name, _, _ in group]
        for name, op, value in groups[0] if len(groups) == 1 else []:
            if op == "=" and name != "__name__" and names.count(name) == 1:
                pairs[name] = value
    entries = ", ".join(
        f"{{'key': {text(k)}, 'value': {text(v)}}}" for k, v in sorted(pairs.items())
    )
    labels = f"map_from_entries([{entries}]::STRUCT(key VARCHAR, value VARCHAR)[])"
    series = ctx.plan.add("series", f"SELECT 0::BIGINT AS sid, {labels} AS labels")
    steps = ctx.steps()
    points = ctx.plan.add(
        "absent",
        f"SELECT 0::BIGINT AS sid, k, 1.0::DOUBLE AS v FROM {steps}\n"
        f"WHERE k NOT IN (SELECT k FROM {vector.points})",
    )
    return Vector(series, points, named=False)


def _string_arg(args: list[Any], at: int, ctx: Context, what: str) -> str:
    value = evaluate(args[at], ctx)
    if not isinstance(value, String):
        raise PromQLError(f"{what} must be a string")
    return value.value


_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _expand(template: str, pattern: str) -> str:
    """Go's Regexp.Expand template (`$1`, `${1}`, `$name`, `$$`) as a DuckDB replacement
    (`\\1`); a group that does not exist expands to nothing, as in Go."""
    try:
        named = re.compile(pattern).groupindex
        groups = re.compile(pattern).groups
    except re.error:
        named, groups = {}, 99
    out: list[str] = []
    for piece in re.finditer(r"\$\$|\$\{([^}]*)\}|\$([A-Za-z0-9_]+)|\$|[^$]+", template):
        token, name = piece.group(0), piece.group(1) or piece.group(2)
        if token == "$$":
            out.append("$")
        elif name is None:
            out.append(token.replace("\\", "\\\\") if token != "$" else "$")
        elif name.isdigit():
            out.append(f"\\{int(name)}" if int(name) <= min(groups, 9) else "")
        else:
            out.append(f"\\{named[name]}" if name in named and named[name] <= 9 else "")
    return "".join(out)


def _label_replace(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "label_replace")
    dst = _string_arg(args, 1, ctx, "label_replace's destination")
    replacement = _string_arg(args, 2, ctx, "label_replace's replacement")
    src = _string_arg(args, 3, ctx, "label_replace's source label")
    pattern = _string_arg(args, 4, ctx, "label_replace's regex")
    if not _LABEL_NAME.fullmatch(dst):
        raise PromQLError(f"invalid destination label name in label_replace(): {dst}")
    try:
        re.compile(pattern)
    except re.error:
        raise PromQLError(
            f"invalid regular expression in label_replace(): {pattern}", "execution"
        ) from None
    anchored = text(f"^(?:{pattern})$")
    got = f"coalesce(labels[{text(src)}], '')"
    value = f"regexp_replace({got}, {anchored}, {text(_expand(replacement, pattern))})"
    rest = f"list_filter(map_entries(labels), lambda e: e.key <> {text(dst)})"
    new = (
        f"CASE WHEN NOT regexp_full_match({got}, {anchored}) THEN labels "
        f"ELSE map_from_entries(list_sort(list_concat({rest}, CASE WHEN {value} = '' THEN [] "
        f"ELSE [{{'key': {text(dst)}, 'value': {value}}}] END))) END"
    )
    series = lab.relabel(ctx.plan, vector, new)
    return Vector(series, vector.points, vector.named, vector.sample_times, None)


def _label_join(args: list[Any], ctx: Context) -> Value:
    vector = _vector_arg(args, 0, ctx, "label_join")
    dst = _string_arg(args, 1, ctx, "label_join's destination")
    separator = _string_arg(args, 2, ctx, "label_join's separator")
    sources = [_string_arg(args, i, ctx, "label_join's source label") for i in range(3, len(args))]
    if not _LABEL_NAME.fullmatch(dst):
        raise PromQLError(f"invalid destination label name in label_join(): {dst}")
    parts = ", ".join(f"coalesce(labels[{text(s)}], '')" for s in sources) or "''"
    value = f"concat_ws({text(separator)}, {parts})" if sources else "''"
    rest = f"list_filter(map_entries(labels), lambda e: e.key <> {text(dst)})"
    new = (
        f"map_from_entries(list_sort(list_concat({rest}, CASE WHEN {value} = '' THEN [] "
        f"ELSE [{{'key': {text(dst)}, 'value': {value}}}] END)))"
    )
    series = lab.relabel(ctx.plan, vector, new)
    return Vector(series, vector.points, vector.named, vector.sample_times, None)


def _sort(args: list[Any], ctx: Context) -> Value:
    return _vector_arg(args, 0, ctx, "sort")  # the order is the renderer's (instant queries)


def _calendar(name: str, args: list[Any], ctx: Context) -> Value:
    field = CALENDAR[name]
    if not args:
        steps = ctx.steps()
        x = f"to_timestamp({ctx.grid.t()} / 1000.0)"
        expression = field.replace("x", x) + "::DOUBLE"
        series = ctx.plan.add("series", NO_LABELS)
        points = ctx.plan.add("cal", f"SELECT 0::BIGINT AS sid, k, {expression} AS v FROM {steps}")
        return Vector(series, points, named=False)
    vector = _vector_arg(args, 0, ctx, name)
    x = "to_timestamp(v)"
    expression = (
        f"CASE WHEN isnan(v) OR isinf(v) THEN {NAN} ELSE {field.replace('x', x)}::DOUBLE END"
    )
    return _map_values(vector, expression, ctx)


def _pi(args: list[Any], ctx: Context) -> Value:
    return Scalar(value=3.141592653589793)


_CALLS: dict[str, Callable[[list[Any], Context], Value]] = {
    "round": _round,
    "clamp": _clamp_call,
    "clamp_min": _clamp_min,
    "clamp_max": _clamp_max,
    "timestamp": _timestamp,
    "time": _time,
    "vector": _vector,
    "scalar": _scalar,
    "absent": _absent_call,
    "label_replace": _label_replace,
    "label_join": _label_join,
    "sort": _sort,
    "sort_desc": _sort,
    "pi": _pi,
}
