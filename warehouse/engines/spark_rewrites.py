"""Rewrite rules that make a DuckDB-dialect query run the same on Spark.

sqlglot's duckdb → spark transpile is the base; these steps fix what it gets wrong or leaves
unrunnable (FIELD_NOTES.md, "sqlglot 30"). Each rule takes and returns a sqlglot tree parsed
as DuckDB and is golden-tested in `tests/warehouse/engines/fixtures/portable.sql`. Constructs
no rule can translate faithfully are found by `warehouse.engines.portable.problems`, not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from sqlglot import exp

from udfs.registry import REGISTRY

Rule = Callable[[exp.Expression], exp.Expression]

#: DuckDB interval units in seconds: a bucket whose width divides a day lines up with the epoch
#: as DuckDB's (origin 2000-01-03) does, so `floor(epoch / width)` gives the same buckets.
_UNIT_S = {
    "SECOND": 1,
    "MINUTE": 60,
    "HOUR": 3600,
    "DAY": 86400,
}
_TRUNCATABLE = {"SECOND", "MINUTE", "HOUR", "DAY"}
_INTEGER_TYPES = {
    exp.DType.TINYINT,
    exp.DType.SMALLINT,
    exp.DType.INT,
    exp.DType.BIGINT,
}
_MODELS = {m.name: m for m in REGISTRY}
_SPARK_PARAM_TYPES = {"DOUBLE": "DOUBLE", "INTEGER": "DOUBLE", "VARCHAR": "STRING"}


def _fn(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _double(node: exp.Expression) -> exp.Cast:
    return exp.cast(node, exp.DType.DOUBLE)


def bucket_width_s(interval: exp.Expression) -> tuple[int, str] | None:
    """(width in seconds, unit) of a constant `INTERVAL 'n unit'`, None when not constant.

    >>> from sqlglot import parse_one
    >>> bucket_width_s(parse_one("INTERVAL '15 minutes'", read="duckdb"))
    (900, 'MINUTE')
    """
    if isinstance(interval, exp.Cast) and interval.to.this == exp.DType.INTERVAL:
        text = interval.this.name if isinstance(interval.this, exp.Literal) else ""
        interval = exp.Interval(this=exp.Literal.string(text))
    if not isinstance(interval, exp.Interval):
        return None
    count, unit = interval.this, interval.args.get("unit")
    text = count.name if isinstance(count, exp.Literal) else ""
    if unit is None and len(text.split()) == 2:
        text, unit_text = text.split()
    else:
        unit_text = unit.name if unit is not None else ""
    unit_text = unit_text.upper().rstrip("S")
    if unit_text not in _UNIT_S or not text.strip().isdigit():
        return None
    return int(text) * _UNIT_S[unit_text], unit_text


def time_buckets(tree: exp.Expression) -> exp.Expression:
    """`time_bucket(INTERVAL, ts)` → DATE_TRUNC for one unit, else epoch-aligned seconds.

    Only bucket widths that divide a day qualify (`problems` reports the others), where
    DuckDB's origin and the epoch give the same boundaries.
    """

    def rewrite(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.DateBin) or node.args.get("unit") is not None:
            return node
        width = bucket_width_s(node.this)
        if width is None or 86400 % width[0]:
            return node
        seconds, unit = width
        ts = node.expression
        if seconds == _UNIT_S[unit] and unit in _TRUNCATABLE:
            return _fn("DATE_TRUNC", exp.Literal.string(unit), ts)
        micros = exp.Literal.number(seconds * 1_000_000)
        floor = exp.Floor(this=exp.Div(this=_fn("UNIX_MICROS", ts), expression=micros))
        return _fn("TIMESTAMP_SECONDS", exp.Mul(this=floor, expression=exp.Literal.number(seconds)))

    return tree.transform(rewrite)


def exact_percentiles(tree: exp.Expression) -> exp.Expression:
    """quantile_cont / percentile_cont WITHIN GROUP / median → Spark's exact PERCENTILE.

    sqlglot turns the WITHIN GROUP form into PERCENTILE_APPROX, which is silently different.
    """

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
            order = node.expression.expressions
            if len(order) == 1 and not order[0].args.get("desc"):
                return _fn("PERCENTILE", order[0].this, node.this.this)
        if isinstance(node, exp.PercentileCont) and node.expression is not None:
            return _fn("PERCENTILE", node.this, node.expression)
        if isinstance(node, exp.Median):
            return _fn("PERCENTILE", node.this, exp.Literal.number("0.5"))
        return node

    return tree.transform(rewrite)


def epochs(tree: exp.Expression) -> exp.Expression:
    """epoch(ts) keeps its fraction (UNIX_MICROS / 1e6); epoch_ms(ts) → UNIX_MILLIS(ts).

    `epoch(b - a)` of two timestamps is the interval's seconds: the difference of their micros.

    `epoch_ms` of a number is the other direction (a timestamp) and stays as sqlglot renders it.
    """

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.TimeToUnix):
            inner = node.this.unnest()
            if isinstance(inner, exp.Sub):  # epoch(b - a): the seconds of an interval
                micros: exp.Expression = exp.Sub(
                    this=_fn("UNIX_MICROS", inner.this),
                    expression=_fn("UNIX_MICROS", inner.expression),
                )
            else:
                micros = _fn("UNIX_MICROS", node.this)
            return exp.Div(this=_double(micros), expression=_double(exp.Literal.number(1_000_000)))
        scale = node.text("scale") if isinstance(node, exp.UnixToTime) else ""
        if scale == "3" and not _numeric(node.this):
            return _fn("UNIX_MILLIS", node.this)
        return node

    return tree.transform(rewrite)


def ordered_aggregates(tree: exp.Expression) -> exp.Expression:
    """first(x ORDER BY y) → MIN_BY(x, y); list(x ORDER BY y) keeps its order in Spark.

    sqlglot drops the ORDER BY of `list`/`array_agg`; sorting structs of (key, value) and
    keeping the values is the order-preserving Spark form.
    """

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.First | exp.Last) and isinstance(node.this, exp.Order):
            order = node.this.expressions
            if len(order) == 1:
                ascending = not order[0].args.get("desc")
                pick = "MIN_BY" if ascending == isinstance(node, exp.First) else "MAX_BY"
                return _fn(pick, node.this.this, order[0].this)
        if isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order):
            keys = [o.this for o in node.this.expressions]
            fields: list[exp.Expression] = [
                cast(exp.Expression, exp.alias_(k, f"k{i}")) for i, k in enumerate(keys)
            ]
            value = cast(exp.Expression, exp.alias_(node.this.this, "v"))
            packed = _fn("STRUCT", *fields, value)
            sort = _fn("ARRAY_SORT", _fn("COLLECT_LIST", packed))
            directions = {bool(o.args.get("desc")) for o in node.this.expressions}
            if len(directions) > 1:
                return node  # `problems` reports mixed directions
            if directions == {True}:
                sort = _fn("REVERSE", sort)
            lam = exp.Lambda(this=exp.column("v", table="s"), expressions=[exp.to_identifier("s")])
            return _fn("TRANSFORM", sort, lam)
        return node

    return tree.transform(rewrite)


def list_sums(tree: exp.Expression) -> exp.Expression:
    """list_sum(l) → AGGREGATE over the non-NULL elements (NULL for an empty list, as DuckDB)."""

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and node.name.lower() == "list_sum":
            values = node.expressions[0]
            x, acc = exp.to_identifier("x"), exp.to_identifier("acc")
            kept = _fn(
                "FILTER",
                values,
                exp.Lambda(this=exp.column("x").is_(exp.null()).not_(), expressions=[x]),
            )
            add = exp.Lambda(
                this=exp.Add(this=exp.column("acc"), expression=_double(exp.column("x"))),
                expressions=[acc, x],
            )
            total = _fn("AGGREGATE", kept, _double(exp.Literal.number(0)), add)
            return exp.If(
                this=exp.GT(this=_fn("SIZE", kept), expression=exp.Literal.number(0)),
                true=total,
                false=exp.null(),
            )
        return node

    return tree.transform(rewrite)


def double_literals(tree: exp.Expression) -> exp.Expression:
    """`1000.0`, `3.6e6` are DOUBLE, not DECIMAL: Spark's DECIMAL arithmetic rounds to scale 6.

    (DuckDB turns a decimal divided by anything into a DOUBLE; Spark keeps a DECIMAL.)
    """

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Literal) and not node.is_string:
            text = node.name.lower()
            if ("." in text or "e" in text) and not isinstance(node.parent, exp.Cast):
                return _double(node.copy())
        return node

    return tree.transform(rewrite)


def rounding_casts(tree: exp.Expression) -> exp.Expression:
    """CAST(x AS INTEGER) rounds in DuckDB and truncates in Spark: round first.

    Integer-valued operands (columns of integer tables, integer literals) pass through: ROUND
    of an integer is itself, so the rule is safe for them too; literals are left as they are.
    """

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Cast) and node.to.this in _INTEGER_TYPES:
            inner = node.this
            if (isinstance(inner, exp.Literal) and inner.is_int) or isinstance(inner, exp.Round):
                return node
            if isinstance(inner, exp.Literal) and inner.is_string:
                return node
            return exp.Cast(this=exp.Round(this=inner.copy()), to=node.to.copy())
        return node

    return tree.transform(rewrite)


def model_arguments(tree: exp.Expression) -> exp.Expression:
    """Model UDF arguments cast to the Python function's types (counts as DOUBLE, as DuckDB's
    Arrow binding does, so a fractional count is refused rather than truncated)."""

    def rewrite(node: exp.Expression) -> exp.Expression:
        model = _MODELS.get(node.name.lower()) if isinstance(node, exp.Anonymous) else None
        if model is None or len(node.expressions) != len(model.params):
            return node
        cast_args = [
            exp.cast(arg.copy(), _SPARK_PARAM_TYPES.get(p.type, p.type))
            for arg, p in zip(node.expressions, model.params.values(), strict=True)
        ]
        return _fn(model.name, *cast_args)

    return tree.transform(rewrite)


def unqualify_tables(tree: exp.Expression) -> exp.Expression:
    """`warehouse.main.t` / `main.t` → `t`: Spark sees the lake's tables as temporary views."""
    for table in tree.find_all(exp.Table):
        if table.args.get("db") is not None and table.text("db").lower() == "main":
            table.set("db", None)
            table.set("catalog", None)
    return tree


def _numeric(node: exp.Expression) -> bool:
    return (isinstance(node, exp.Literal) and not node.is_string) or isinstance(
        node, exp.Add | exp.Sub | exp.Mul | exp.Div
    )


#: In order: model arguments are cast before literals become DOUBLE, so counts stay exact.
RULES: tuple[Rule, ...] = (
    unqualify_tables,
    model_arguments,
    time_buckets,
    exact_percentiles,
    epochs,
    ordered_aggregates,
    list_sums,
    double_literals,
    rounding_casts,
)
