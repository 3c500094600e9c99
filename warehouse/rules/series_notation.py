"""The input series of promtool's unit tests: a metric (`up{job="a"}`) and its values in
Prometheus's expanding notation, one value per interval from t = 0.

`a+bxn` / `a-bxn` give n + 1 values from a in steps of b; `axn` is `a+0xn`; `_` is a missing
sample and `_xn` n of them; `stale` a staleness marker.

>>> expand("1x3 _x2 5 stale 1+1x2 10-2x1")
[1.0, 1.0, 1.0, 1.0, None, None, 5.0, 'stale', 1.0, 2.0, 3.0, 10.0, 8.0]
>>> metric('up{job="a", instance="x:1"}')
{'__name__': 'up', 'instance': 'x:1', 'job': 'a'}
"""

from __future__ import annotations

import re
from typing import Any

import promql_parser as pp

Value = float | str | None  # a value, "stale", or None (no sample)

_NUMBER = r"[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|inf|NaN|nan)"  # `0x10`: 0, 10 times
_ITEM = re.compile(
    rf"(?P<start>{_NUMBER})(?:(?P<sign>[-+])(?P<step>{_NUMBER.removeprefix('[-+]?')}))?"
    r"(?:x(?P<times>[0-9]+))?"
)
_BLANK = re.compile(r"_(?:x(?P<times>[0-9]+))?")


class BadSeries(ValueError):
    """An input series promtool would not load."""


def _float(text: str) -> float:
    lowered = text.lower().lstrip("+")
    if lowered in ("inf", "-inf", "nan"):
        return float(lowered)
    return float(text)


def expand(values: str) -> list[Value]:
    """Every value of a notation, in order."""
    found: list[Value] = []
    for item in values.split():
        if item == "stale":
            found.append("stale")
            continue
        blank = _BLANK.fullmatch(item)
        if blank is not None:
            found.extend([None] * int(blank["times"] or 1))
            continue
        match = _ITEM.fullmatch(item)
        if match is None:
            raise BadSeries(f'1:1: parse error: unexpected "{item}" in series values')
        start = _float(match["start"])
        if match["times"] is None:
            if match["step"] is not None:
                raise BadSeries(f'1:1: parse error: missing "x" after "{item}"')
            found.append(start)
            continue
        step = _float(match["step"]) if match["step"] is not None else 0.0
        step = -step if match["sign"] == "-" else step
        found.extend(start + i * step for i in range(int(match["times"]) + 1))
    return found


def metric(text: str) -> dict[str, str]:
    """The labels of a series written as a selector with equality matchers only."""
    try:
        node: Any = pp.parse(text)
    except (ValueError, RuntimeError) as error:
        raise BadSeries(f"1:1: parse error: {error}") from None
    if type(node).__name__ != "VectorSelector" or node.offset or node.at:
        raise BadSeries(f'1:1: parse error: "{text}" is not a series')
    labels = {"__name__": node.name} if node.name else {}
    for matcher in node.matchers.matchers:
        if str(matcher.op) != "MatchOp.Equal":
            raise BadSeries(f'1:1: parse error: "{text}" has a matcher that is not "="')
        labels[matcher.name] = matcher.value
    return dict(sorted(labels.items()))
