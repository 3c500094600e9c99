"""Planner step: which refresh strategy a query's shape allows, and why not when it doesn't.

Returns ('append' | 'aggregate' | 'groups', None) for shapes the incremental strategies
maintain, else ('full', reason) with a reason meant for the person who wrote the query.
"""

from __future__ import annotations

from sqlglot import exp

from warehouse.kernel.tables import REFERENCE

#: Aggregates whose value over old + new rows follows from their values over each part.
DECOMPOSABLE = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg, exp.ArgMax, exp.ArgMin)

#: Aggregates whose value depends on the order rows are read in: a recompute may differ.
ORDER_DEPENDENT = (exp.AnyValue, exp.First, exp.Last)


def _not_decomposable(agg: exp.AggFunc) -> bool:
    """count(DISTINCT), quantiles, list, string_agg, UDF aggregates: recompute their groups."""
    distinct = isinstance(agg.this, exp.Distinct) or agg.find(exp.Distinct) is not None
    top_n = isinstance(agg, exp.ArgMax | exp.ArgMin) and agg.args.get("count") is not None
    return distinct or top_n or not isinstance(agg, DECOMPOSABLE)


def source_tables(select: exp.Expression) -> list[str]:
    """Tables the query reads (CTE names excluded), in order of appearance, lower-cased.

    >>> import sqlglot
    >>> source_tables(sqlglot.parse_one("SELECT * FROM a JOIN main.b USING (x)"))
    ['a', 'b']
    """
    ctes = {c.alias_or_name.lower() for c in select.find_all(exp.CTE)}
    found: list[str] = []
    for table in select.find_all(exp.Table):
        name = table.name.lower()
        if name and name not in ctes and name not in found:
            found.append(name)
    return found


def classify(
    select: exp.Select, tracked: frozenset[str], dynamic: frozenset[str]
) -> tuple[str, str | None]:
    """The strategy for `select` (GROUP BY already normalised) and the reason when it is full."""
    sources = source_tables(select)
    reason = _source_reason(select, sources, tracked, dynamic) or _clause_reason(select)
    if reason:
        return "full", reason
    windows = list(select.find_all(exp.Window))
    if windows:
        if any(not w.args.get("partition_by") for w in windows):
            return "full", "a window function without PARTITION BY depends on every row"
        return "full", "window functions are refreshed fully for now"
    aggregates = [a for a in select.find_all(exp.AggFunc)]
    chained = [s for s in sources if s in dynamic]
    if not aggregates and not select.args.get("group"):
        if chained:
            return "full", (
                f"it reads dynamic table {chained[0]} without GROUP BY: rows its refresh "
                "removes cannot be found again here, so it is refreshed fully"
            )
        return "append", None
    if not select.args.get("group"):
        return "full", "an aggregate without GROUP BY is one row and is recomputed fully"
    for agg in aggregates:
        if isinstance(agg, ORDER_DEPENDENT):
            return "full", (
                f"{agg.sql('duckdb')} depends on the order rows are read in: refreshed fully"
            )
    if chained or any(_not_decomposable(agg) for agg in aggregates):
        # chains and the rest: recompute the groups a change touches (plan.joins)
        return "groups", None
    # decomposable over one table or an inner join: new fact rows (the first table's) fold into
    # the state joined with the other tables as they are; a change of another table recomputes
    # the groups it touches (warehouse.dynamic.refresh)
    return "aggregate", None


def _source_reason(
    select: exp.Select, sources: list[str], tracked: frozenset[str], dynamic: frozenset[str]
) -> str | None:
    untracked = [s for s in sources if s not in tracked | dynamic | REFERENCE]
    if untracked:
        return (
            f"{untracked[0]} has no change tracking (no batch ids): only base tables, "
            "reference tables and dynamic tables do"
        )
    if not sources:
        return "the query reads no table"
    if all(s in REFERENCE for s in sources):
        return "it reads only reference tables, which change only when wanka reloads them"
    return _join_reason(select)


def _join_reason(select: exp.Select) -> str | None:
    """Why the joins of `select` are not maintained incrementally, or None when they are."""
    for join in select.args.get("joins") or []:
        side, kind = join.side.upper(), join.kind.upper()
        if side:
            return (
                f"{side} JOIN: a change on the outer side moves rows between matched and "
                "NULL-extended, which is refreshed fully for now (an inner JOIN is incremental)"
            )
        if kind not in ("", "INNER", "CROSS"):
            return f"{kind} JOIN is refreshed fully for now (an inner JOIN is incremental)"
        if not isinstance(join.this, exp.Table):
            return "a join with a subquery or table function is refreshed fully for now"
        if join.args.get("method") or join.args.get("match_condition"):
            return "ASOF and POSITIONAL joins are refreshed fully for now"
    return None


def _clause_reason(select: exp.Select) -> str | None:
    if not isinstance(select, exp.Select):
        return "set operations (UNION, EXCEPT, INTERSECT) are refreshed fully for now"
    if select.args.get("with_") or select.args.get("with"):
        return "common table expressions (WITH) are refreshed fully for now"
    if any(isinstance(n, exp.Subquery | exp.Union) for n in select.walk() if n is not select):
        return "subqueries are refreshed fully for now"
    if select.args.get("distinct"):
        return "SELECT DISTINCT is refreshed fully for now"
    if select.args.get("limit") or select.args.get("order"):
        return "ORDER BY / LIMIT pick rows from the whole result: refreshed fully"
    if select.args.get("qualify"):
        return "QUALIFY filters on window functions: refreshed fully"
    return None
