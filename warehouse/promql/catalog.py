"""SQL for the metadata side of the query API: the series `match[]` selectors select, the
label names and the values of one label among them (Grafana's `label_values(...)` variables).

A selector's series are the ones its matchers select from wanka.gpu_series and prom_samples
(`source.select`), with the labels they arrived with. Without `match[]`, every series.
"""

from __future__ import annotations

from typing import Any

from warehouse.promql import source, translate
from warehouse.promql.plan import Grid, Plan, PromQLError

EVERY = [[("__name__", "=~", ".+")]]


def _groups(selector: str) -> list[list[tuple[str, str, str]]]:
    tree: Any = translate.parse(selector)
    if type(tree).__name__ != "VectorSelector":
        raise PromQLError(f"match[] must be a series selector, not {selector!r}")
    groups = source.matchers_of(tree)
    if not any(v for group in groups for (_, op, v) in group if op in ("=", "=~") and v):
        raise PromQLError("match[] must contain at least one non-empty matcher")
    return groups


def _series(plan: Plan, matches: list[str], start_ms: int, end_ms: int) -> str:
    """A CTE of the labels of every series any of `matches` selects."""
    selected = [
        source.select(plan, groups, start_ms, end_ms)
        for groups in ([_groups(m) for m in matches] or [EVERY])
    ]
    return plan.add(
        "matched", " UNION ".join(f"SELECT DISTINCT labels FROM {name}" for name in selected)
    )


def series(matches: list[str], start_ms: int, end_ms: int) -> str:
    """Rows (labels JSON) of every selected series, ordered by labels."""
    plan = Plan(Grid(start_ms, end_ms, 1))
    found = _series(plan, matches, start_ms, end_ms)
    return plan.query(
        f"SELECT to_json(labels)::VARCHAR AS labels FROM {found} ORDER BY labels::VARCHAR"
    )


def label_names(matches: list[str], start_ms: int, end_ms: int) -> str:
    """Rows (name) of every label name the selected series carry, sorted."""
    plan = Plan(Grid(start_ms, end_ms, 1))
    found = _series(plan, matches, start_ms, end_ms)
    return plan.query(
        f"SELECT DISTINCT unnest(map_keys(labels)) AS name FROM {found} ORDER BY name"
    )


def label_values(name: str, matches: list[str], start_ms: int, end_ms: int) -> str:
    """Rows (value) of the label `name` among the selected series, sorted, none empty."""
    plan = Plan(Grid(start_ms, end_ms, 1))
    found = [
        source.label_values(plan, groups, name, start_ms, end_ms)
        for groups in ([_groups(m) for m in matches] or [EVERY])
    ]
    union = " UNION ".join(f"SELECT value FROM {each}" for each in found)
    return plan.query(f"SELECT DISTINCT value FROM ({union}) WHERE value <> '' ORDER BY value")
