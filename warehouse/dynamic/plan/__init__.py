"""The incremental planner: a defining SELECT in, a typed refresh plan out (`kinds`).

Like sqlglot's optimizer it is a short pipeline of named steps over a sqlglot tree, each in its
own module with golden tests: normalize (GROUP BY as expressions) → shape (append, aggregate,
groups or full, with the reason) → determinism (DuckDB function stability) → delta / aggregate /
merge / groups (the queries each refresh runs, with `$lo`/`$hi` binding the window of new batch
ids). Every query of a plan is a sqlglot tree rendered once, here.
"""

from __future__ import annotations

from typing import cast

import duckdb
import sqlglot
from sqlglot import exp

from warehouse.dynamic.plan.aggregate import key_positions, plan_aggregate
from warehouse.dynamic.plan.delta import restrict_to_delta
from warehouse.dynamic.plan.determinism import nondeterminism_reason
from warehouse.dynamic.plan.groups import affected_keys, bounds_query, restrict_to_groups
from warehouse.dynamic.plan.joins import join_delta, tables_of
from warehouse.dynamic.plan.kinds import Aggregate, Append, Full, Groups, Plan, Recompute
from warehouse.dynamic.plan.merge import merge
from warehouse.dynamic.plan.normalize import normalize_group_by
from warehouse.dynamic.plan.shape import classify, source_tables
from warehouse.kernel.tables import TRACKED
from warehouse.promql import sql_function
from warehouse.tsdb import relations

_PROMQL = "a PromQL table function (promql_range, promql_query) is evaluated afresh at each refresh"

__all__ = ["Aggregate", "Append", "Full", "Groups", "Plan", "Recompute", "plan_query"]


def state_table(name: str) -> exp.Table:
    """`wanka."dt_<name>_state"`, where an aggregate plan keeps its per-group state."""
    return exp.Table(
        this=exp.to_identifier(f"dt_{name}_state", quoted=True), db=exp.to_identifier("wanka")
    )


def _sql(tree: exp.Expr) -> str:
    return tree.sql("duckdb")


def plan_query(
    select: exp.Expression,
    name: str,
    con: duckdb.DuckDBPyConnection | None = None,
    dynamic: frozenset[str] = frozenset(),
    *,
    mode: str = "auto",
) -> Plan:
    """Plan `select` for dynamic table `name`; `con` resolves function stability."""
    if isinstance(select, exp.Select):
        select = normalize_group_by(select)
    query = _sql(select)
    sources = tuple(source_tables(select))
    if mode == "full":
        return Full(sources, query, "refresh_mode = 'full' was asked for")
    if sql_function.calls(query):  # it reads the samples: a refresh follows their arrival
        read = tuple(dict.fromkeys([*sources, "gpu_metrics", "prom_samples"]))
        return Full(read, query, _PROMQL)
    if not isinstance(select, exp.Select):
        set_op = "set operations (UNION, EXCEPT, INTERSECT) are refreshed fully for now"
        return Full(sources, query, set_op)
    kind, reason = classify(select, TRACKED, dynamic)
    if kind != "full" and con is not None:
        found = nondeterminism_reason(select, con)
        if found:
            kind, reason = "full", found
    if kind == "full":
        return Full(sources, query, reason or "it cannot be refreshed incrementally")
    joined = len(tables_of(select)) > 1
    if kind == "append":
        delta = join_delta(select) if joined else restrict_to_delta(select)
        return Append(sources, query, _sql(delta))
    positions = tuple(key_positions(select))
    if -1 in positions:
        keys = "every GROUP BY key must be a column of the result to rewrite its rows"
        return Full(sources, query, keys)
    not_null = _not_null(con, select) if joined else _not_null(con, sources[0])
    if kind == "groups":
        fact = sources[0] if joined else None
        return Groups(
            sources,
            query,
            positions,
            _recompute(select, select, not_null, dynamic),
            _recompute(select, select, not_null, dynamic, fact) if fact else None,
        )
    table = state_table(name)
    agg = plan_aggregate(select, table)
    return Aggregate(
        sources,
        query,
        positions,
        state=_sql(agg.state),
        delta=_sql(agg.delta),
        merge=_sql(merge(agg, table)),
        visible=_sql(agg.visible),
        recompute=_recompute(select, agg.state, not_null),
    )


def _recompute(
    select: exp.Select,
    rows: exp.Select,
    not_null: frozenset[str],
    dynamic: frozenset[str] = frozenset(),
    only: str | None = None,
) -> Recompute:
    """The affected groups of `select` and `rows` (the query, or an aggregate's state) of them."""
    return Recompute(
        affected=_sql(affected_keys(select, dynamic, only)),
        groups=_sql(restrict_to_groups(rows, not_null, dynamic, only)),
        bounds=_sql(bounds_query(select, not_null, dynamic, only)),
    )


def parse_select(text: str) -> exp.Expression:
    """Parse a defining query in DuckDB's dialect."""
    return cast(exp.Expression, sqlglot.parse_one(text, read="duckdb"))


def _not_null(con: duckdb.DuckDBPyConnection | None, source: str | exp.Select) -> frozenset[str]:
    """The NOT NULL columns of base table `source`, or `alias.column` of each table a join reads.

    None are known without a connection. Inner joins never NULL-extend, so a NOT NULL column of
    any joined table stays non-NULL in the join (outer joins are refreshed fully).
    """
    if con is None:
        return frozenset()
    aliases = (
        [(source, "")]
        if isinstance(source, str)
        else [(t.name.lower(), t.alias_or_name.lower() + ".") for t in tables_of(source)]
    )
    found: set[str] = set()
    for table, prefix in aliases:
        rows = con.execute(
            "SELECT lower(column_name) FROM duckdb_columns() WHERE schema_name = 'main' "
            "AND table_name = ? AND NOT is_nullable",
            [table],
        ).fetchall()
        found.update(prefix + r[0] for r in rows)
        if relations.is_view(table):  # a view: its NOT NULL columns are its tables'
            found.update(prefix + c for c in relations.REQUIRED)
    return frozenset(found)
