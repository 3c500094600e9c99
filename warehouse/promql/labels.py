"""Label work on a vector's series: dropping `__name__`, keeping or removing labels, and the
check Prometheus makes when two series end up with one label set."""

from __future__ import annotations

from warehouse.promql.plan import Plan, Vector, text, text_list

SAME_LABELSET = "vector cannot contain metrics with the same labelset"


def keep(names: list[str], labels: str = "labels") -> str:
    """The labels map with only `names` (kept in order: the result stays sorted)."""
    return (
        f"map_from_entries(list_filter(map_entries({labels}), "
        f"lambda e: list_contains({text_list(names)}, e.key)))"
    )


def without(names: list[str], labels: str = "labels") -> str:
    """The labels map without `names` and without `__name__`."""
    return (
        f"map_from_entries(list_filter(map_entries({labels}), "
        f"lambda e: NOT list_contains({text_list([*names, '__name__'])}, e.key)))"
    )


def unique_check(plan: Plan, series: str, points: str, message: str = SAME_LABELSET) -> str:
    """`series` again, failing the query when two of its series share a label set and both
    have a point at one step (Prometheus checks each step: "vector cannot contain metrics
    with the same labelset"). Only label sets held twice are looked at step by step."""
    twice = plan.add("twice", f"SELECT labels FROM {series} GROUP BY labels HAVING count(*) > 1")
    clash = (
        f"SELECT 1 FROM {points} p JOIN {series} s USING (sid) "
        f"WHERE s.labels IN (SELECT labels FROM {twice}) GROUP BY s.labels, p.k "
        f"HAVING count(*) > 1"
    )
    return plan.add(
        "unique",
        f"SELECT s.sid, s.labels FROM {series} s, (\n"
        f"  SELECT CASE WHEN EXISTS ({clash}) THEN error({text(message)}) END AS failed\n"
        f") c WHERE c.failed IS NULL",
    )


def relabel(plan: Plan, vector: Vector, labels_sql: str, *, may_collide: bool = True) -> str:
    """A series CTE with each series' labels replaced by `labels_sql` (over `labels`)."""
    series = plan.add("relabel", f"SELECT sid, {labels_sql} AS labels FROM {vector.series}")
    return unique_check(plan, series, vector.points) if may_collide else series


def drop_name(plan: Plan, vector: Vector) -> str:
    """The series without `__name__` (as a function or arithmetic leaves them)."""
    if not vector.named:
        return vector.series
    return relabel(plan, vector, without([]), may_collide=vector.metric is None)
