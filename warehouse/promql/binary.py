"""Binary operators between scalars and vectors, with `on`/`ignoring`, `group_left`/
`group_right`, `bool`, and the set operators `and`, `or`, `unless`.

Vector matching is done on the series: each series' signature (its labels restricted by
`on`/`ignoring`, `__name__` out), then the pairs of matching series with the labels their
result will carry (Prometheus's resultMetric); the points are joined per pair and step. The
checks Prometheus makes per step (one side not unique, several matches) are made per step too.
"""

from __future__ import annotations

import math
from typing import Any

from warehouse.promql import labels as lab
from warehouse.promql.context import Context, evaluate
from warehouse.promql.plan import PromQLError, Scalar, Value, Vector, literal, text, text_list

NAN = "'NaN'::DOUBLE"
COMPARISONS = {"==", "!=", ">", "<", ">=", "<="}
SETS = {"and", "or", "unless"}


def arithmetic(op: str, a: str, b: str) -> str:
    """`a op b` as Go computes it on float64 (IEEE: x/0 is ±Inf, NaN propagates)."""
    match op:
        case "+" | "-" | "*" | "/":
            return f"({a} {op} {b})"
        case "%":
            return f"(CASE WHEN {b} = 0 OR isnan({a}) OR isnan({b}) THEN {NAN} ELSE {a} % {b} END)"
        case "^":
            return f"pow({a}, {b})"
        case "atan2":
            return f"atan2({a}, {b})"
    raise PromQLError(f"unknown operator {op}")


def comparison(op: str, a: str, b: str) -> str:
    """`a op b` as Go says it: any comparison with NaN is false, but `!=` is true."""
    if op == "!=":
        return f"({a} <> {b} OR isnan({a}) OR isnan({b}))"
    sql_op = "=" if op == "==" else op
    return f"({a} {sql_op} {b} AND NOT isnan({a}) AND NOT isnan({b}))"


def _fold(op: str, a: float, b: float) -> float | None:
    """Two number literals, folded as Go would (None: leave it to SQL)."""
    try:
        match op:
            case "+":
                return a + b
            case "-":
                return a - b
            case "*":
                return a * b
            case "/":
                if b == 0:
                    return (
                        math.nan
                        if a == 0 or a != a
                        else math.copysign(math.inf, a) * (math.copysign(1.0, b))
                    )
                return a / b
    except OverflowError:
        return None
    return None


def binary(node: Any, ctx: Context) -> Value:
    op = str(node.op)
    lhs, rhs = evaluate(node.lhs, ctx), evaluate(node.rhs, ctx)
    modifier = node.modifier
    returns_bool = bool(modifier is not None and modifier.return_bool)
    if isinstance(lhs, Scalar) and isinstance(rhs, Scalar):
        return _scalars(op, lhs, rhs, returns_bool, ctx)
    if isinstance(lhs, Vector) and isinstance(rhs, Vector):
        if op in SETS:
            return _set(op, lhs, rhs, modifier, ctx)
        return _vectors(op, lhs, rhs, modifier, returns_bool, ctx)
    if isinstance(lhs, Vector) and isinstance(rhs, Scalar):
        return _vector_scalar(op, lhs, rhs, returns_bool, ctx, swapped=False)
    if isinstance(lhs, Scalar) and isinstance(rhs, Vector):
        return _vector_scalar(op, rhs, lhs, returns_bool, ctx, swapped=True)
    raise PromQLError(f"the operator {op} needs numbers or instant vectors on both sides")


def _scalars(op: str, lhs: Scalar, rhs: Scalar, returns_bool: bool, ctx: Context) -> Value:
    if lhs.value is not None and rhs.value is not None and op not in COMPARISONS:
        folded = _fold(op, lhs.value, rhs.value)
        if folded is not None:
            return Scalar(value=folded)
    steps = ctx.steps()
    a, b = _scalar_side(lhs, "a"), _scalar_side(rhs, "b")
    joins = "".join(
        f" JOIN {side.points} {alias} USING (k)"
        for side, alias in ((lhs, "a"), (rhs, "b"))
        if side.value is None
    )
    if op in COMPARISONS:
        if not returns_bool:
            raise PromQLError("comparisons between scalars must use the bool modifier")
        value = f"CASE WHEN {comparison(op, a, b)} THEN 1.0 ELSE 0.0 END"
    else:
        value = arithmetic(op, a, b)
    return Scalar(ctx.plan.add("scalar", f"SELECT k, {value} AS v FROM {steps}{joins}"))


def _scalar_side(value: Scalar, alias: str) -> str:
    return literal(value.value) if value.value is not None else f"{alias}.v"


def _vector_scalar(
    op: str, vector: Vector, number: Scalar, returns_bool: bool, ctx: Context, *, swapped: bool
) -> Value:
    s = _scalar_side(number, "s")
    join = f" JOIN {number.points} s USING (k)" if number.value is None else ""
    a, b = (s, "p.v") if swapped else ("p.v", s)
    if op in SETS:
        raise PromQLError(f"the set operator {op} needs instant vectors on both sides")
    if op not in COMPARISONS:
        value, where = arithmetic(op, a, b), "true"
    elif returns_bool:
        value, where = f"CASE WHEN {comparison(op, a, b)} THEN 1.0 ELSE 0.0 END", "true"
    else:
        value, where = "p.v", comparison(op, a, b)
    points = ctx.plan.add(
        "op", f"SELECT p.sid, p.k, {value} AS v FROM {vector.points} p{join} WHERE {where}"
    )
    if op in COMPARISONS and not returns_bool:
        return Vector(vector.series, points, vector.named, False, vector.metric)
    return Vector(lab.drop_name(ctx.plan, vector), points, named=False)


def _signature(modifier: Any) -> str:
    matching = modifier.matching if modifier is not None else None
    if matching is None:
        return lab.without([])
    names = list(matching.labels)
    if str(matching.type).endswith("Include"):  # on(...)
        return lab.keep(names)
    return lab.without(names)


def _signed(vector: Vector, modifier: Any, ctx: Context) -> str:
    return ctx.plan.add(
        "sig", f"SELECT sid, labels, {_signature(modifier)} AS sig FROM {vector.series}"
    )


def _set(op: str, lhs: Vector, rhs: Vector, modifier: Any, ctx: Context) -> Value:
    left, right = _signed(lhs, modifier, ctx), _signed(rhs, modifier, ctx)
    present = f"SELECT r.sig, p.k FROM {rhs.points} p JOIN {right} r USING (sid)"
    if op in ("and", "unless"):
        join = "SEMI" if op == "and" else "ANTI"
        points = ctx.plan.add(
            op,
            f"SELECT p.sid, p.k, p.v FROM {lhs.points} p JOIN {left} l USING (sid)\n"
            f"{join} JOIN ({present}) x ON x.sig = l.sig AND x.k = p.k",
        )
        return Vector(lhs.series, points, lhs.named, lhs.sample_times, lhs.metric)
    # or: every lhs point, and the rhs points whose signature the lhs has not at that step
    series = ctx.plan.add(
        "series",
        f"SELECT 2 * sid AS sid, labels FROM {lhs.series}\n"
        f"UNION ALL SELECT 2 * sid + 1, labels FROM {rhs.series}",
    )
    points = ctx.plan.add(
        "or",
        f"SELECT 2 * sid AS sid, k, v FROM {lhs.points}\n"
        f"UNION ALL\n"
        f"SELECT 2 * p.sid + 1, p.k, p.v FROM {rhs.points} p JOIN {right} r USING (sid)\n"
        f"ANTI JOIN (SELECT l.sig, q.k FROM {lhs.points} q JOIN {left} l USING (sid)) x\n"
        f"  ON x.sig = r.sig AND x.k = p.k",
    )
    same = lhs.metric if lhs.metric == rhs.metric else None
    return Vector(series, points, lhs.named or rhs.named, False, same)


def _result_labels(op: str, modifier: Any, returns_bool: bool, one_to_one: bool) -> str:
    """Prometheus's resultMetric over the many side's labels `m.labels` and the one side's
    `o.labels`."""
    result = "m.labels"
    if op not in COMPARISONS or returns_bool:
        result = lab.without([], result)
    matching = modifier.matching if modifier is not None else None
    if one_to_one and matching is not None:
        names = list(matching.labels)
        if str(matching.type).endswith("Include"):
            result = lab.keep(names, result)
        else:
            result = (
                f"map_from_entries(list_filter(map_entries({result}), "
                f"lambda e: NOT list_contains({text_list(names)}, e.key)))"
            )
    include = list(modifier.group_labels or []) if modifier is not None else []
    if include:
        rest = (
            f"list_filter(map_entries({result}), "
            f"lambda e: NOT list_contains({text_list(include)}, e.key))"
        )
        added = (
            f"list_filter(map_entries(o.labels), "
            f"lambda e: list_contains({text_list(include)}, e.key) AND e.value <> '')"
        )
        result = f"map_from_entries(list_sort(list_concat({rest}, {added})))"
    return result


def _cardinality(modifier: Any) -> str:
    return str(modifier.card).rsplit(".", 1)[-1] if modifier is not None else "OneToOne"


def _vectors(
    op: str, lhs: Vector, rhs: Vector, modifier: Any, returns_bool: bool, ctx: Context
) -> Value:
    card = _cardinality(modifier)
    swapped = card == "OneToMany"
    many, one = (rhs, lhs) if swapped else (lhs, rhs)
    msig, osig = _signed(many, modifier, ctx), _signed(one, modifier, ctx)
    labels = _result_labels(op, modifier, returns_bool, card == "OneToOne")
    pairs = ctx.plan.add(
        "pairs",
        f"SELECT row_number() OVER () AS sid, m.sid AS msid, o.sid AS osid, m.sig,\n"
        f"  {labels} AS labels FROM {msig} m JOIN {osig} o USING (sig)",
    )
    lv, rv = ("op.v", "mp.v") if swapped else ("mp.v", "op.v")
    if op not in COMPARISONS:
        value, kept = arithmetic(op, lv, rv), "true"
    elif returns_bool:
        value, kept = f"CASE WHEN {comparison(op, lv, rv)} THEN 1.0 ELSE 0.0 END", "true"
    else:
        value, kept = lv, comparison(op, lv, rv)
    side = "left" if swapped else "right"
    one_unique = (
        f"SELECT 1 FROM {one.points} q JOIN {osig} o USING (sid) GROUP BY o.sig, q.k "
        f"HAVING count(*) > 1"
    )
    joined = ctx.plan.add(
        "joined",
        f"SELECT pr.sid, pr.sig, mp.k, {value} AS v, {kept} AS kept\n"
        f"FROM {pairs} pr JOIN {many.points} mp ON mp.sid = pr.msid\n"
        f"JOIN {one.points} op ON op.sid = pr.osid AND op.k = mp.k",
    )
    checks = [
        f"WHEN EXISTS ({one_unique}) THEN error({text(_DUPLICATE.format(side=side))})",
    ]
    if card == "OneToOne":
        many_matched = f"SELECT 1 FROM {joined} GROUP BY sig, k HAVING count(*) > 1"
        checks.append(f"WHEN EXISTS ({many_matched}) THEN error({text(_MULTIPLE)})")
    points = ctx.plan.add(
        "op",
        f"SELECT j.sid, j.k, j.v FROM {joined} j,\n"
        f"  (SELECT CASE {' '.join(checks)} END AS failed) c WHERE c.failed IS NULL AND j.kept",
    )
    series = ctx.plan.add("series", f"SELECT sid, labels FROM {pairs}")
    series = lab.unique_check(ctx.plan, series, points)
    keeps_name = op in COMPARISONS and not returns_bool and many.named
    return Vector(series, points, keeps_name, False, many.metric if keeps_name else None)


_DUPLICATE = (
    "found duplicate series for the match group on the {side} hand-side of the operation; "
    "many-to-many matching not allowed: matching labels must be unique on one side"
)
_MULTIPLE = (
    "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
)
