"""What a rule's PromQL expression is, as far as loading and ordering need: parsed as
Prometheus 2.42 parses it (the functions it knew; `promql-parser` knows newer ones), and the
metric names it reads (so a test run knows when a rule reads another's output).

>>> sorted(metric_names("sum(rate(a[5m])) / on() b + c:rec"))
['a', 'b', 'c:rec']
>>> metric_names('{__name__=~"a.*"}') is None
True
>>> check("limitk(1, up)")
Traceback (most recent call last):
...
warehouse.rules.expressions.BadExpression: 1:1: parse error: unknown function with name "limitk"
"""

from __future__ import annotations

from typing import Any

import promql_parser as pp

#: Prometheus 2.42's functions (promql/parser/functions.go) and aggregations.
FUNCTIONS_242 = frozenset(
    """abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes
    clamp clamp_max clamp_min cos cosh count_over_time days_in_month day_of_month day_of_week
    day_of_year deg delta deriv exp floor histogram_count histogram_sum histogram_fraction
    histogram_quantile holt_winters hour idelta increase irate label_replace label_join
    last_over_time ln log10 log2 max_over_time min_over_time minute month pi predict_linear
    present_over_time quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_desc
    sqrt stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector
    year""".split()  # noqa: SIM905 - a list Prometheus's source reads the same way
)
AGGREGATIONS_242 = frozenset(
    "sum avg count min max group stddev stdvar topk bottomk count_values quantile".split()  # noqa: SIM905
)


class BadExpression(ValueError):
    """An expression Prometheus 2.42 does not parse."""


def parse(expression: str) -> Any:
    """The parse tree; `holt_winters` (2.42's name) read as its later name so it parses."""
    try:
        return pp.parse(expression.replace("holt_winters(", "double_exponential_smoothing("))
    except (ValueError, RuntimeError) as error:
        raise BadExpression(f"1:1: parse error: {error}") from None


def check(expression: str) -> Any:
    """Parse `expression` as 2.42 would; BadExpression naming a function 2.42 did not have."""
    tree = parse(expression)
    for node in walk(tree):
        kind = type(node).__name__
        if kind == "Call":
            name = node.func.name
            name = "holt_winters" if name == "double_exponential_smoothing" else name
            if name not in FUNCTIONS_242:
                raise BadExpression(f'1:1: parse error: unknown function with name "{name}"')
        elif kind == "AggregateExpr" and str(node.op) not in AGGREGATIONS_242:
            raise BadExpression(f'1:1: parse error: unknown function with name "{node.op}"')
    return tree


def walk(node: Any) -> list[Any]:
    """Every node of the tree, parents first."""
    found = [node]
    for name in ("expr", "lhs", "rhs", "param", "vector_selector"):
        child = getattr(node, name, None)
        if child is not None and hasattr(child, "prettify"):
            found.extend(walk(child))
    for child in getattr(node, "args", None) or []:
        found.extend(walk(child))
    return found


def metric_names(expression: str) -> set[str] | None:
    """The metric names the expression selects; None when a selector names none (it may read
    any series)."""
    names: set[str] = set()
    for node in walk(parse(expression)):
        if type(node).__name__ != "VectorSelector":
            continue
        if node.name:
            names.add(node.name)
            continue
        exact = [
            m.value
            for m in node.matchers.matchers
            if m.name == "__name__" and str(m.op) == "MatchOp.Equal"
        ]
        if not exact:
            return None
        names.add(exact[0])
    return names
