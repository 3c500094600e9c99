"""The incremental planner: a defining SELECT in, a refresh strategy with its SQL out.

Like sqlglot's optimizer it is a short pipeline of named steps over a sqlglot tree, each in its
own module with golden tests: normalize (GROUP BY as expressions) → shape (append, aggregate,
groups or full, with the reason) → determinism (DuckDB function stability) → delta / aggregate /
merge / groups (the SQL each refresh runs, with `$lo`/`$hi` binding the window of new batch ids).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import cast

import duckdb
import sqlglot
from sqlglot import exp

from warehouse.dynamic.plan.aggregate import key_positions, plan_aggregate
from warehouse.dynamic.plan.delta import restrict_to_delta
from warehouse.dynamic.plan.determinism import nondeterminism_reason
from warehouse.dynamic.plan.groups import affected_keys, bounds_query, restrict_to_groups
from warehouse.dynamic.plan.joins import join_delta, tables_of
from warehouse.dynamic.plan.merge import merge_sql
from warehouse.dynamic.plan.normalize import normalize_group_by
from warehouse.dynamic.plan.shape import classify, source_tables

#: Base tables whose inserts carry batch ids and whose updates/deletes are logged (0005).
TRACKED = frozenset(
    {
        "sites",
        "clusters",
        "nodes",
        "gpu_metrics",
        "jobs",
        "job_steps",
        "job_events",
        "pods",
        "nccl_results",
    }
)


@dataclass(frozen=True)
class Plan:
    """How a dynamic table is refreshed. `kind` is 'append', 'aggregate', 'groups' or 'full'."""

    kind: str
    reason: str | None
    sources: list[str]
    query: str
    delta_sql: str | None = None  # append: the query over new rows only
    state_sql: str | None = None  # aggregate: the state over all rows
    merge_sql: str | None = None  # aggregate: fold the delta into the state
    visible_sql: str | None = None  # aggregate: the touched groups' rows, from the state
    key_positions: list[int] = field(default_factory=list)
    affected_sql: str | None = None  # aggregate, groups: the keys (k0, ...) of the changed rows
    groups_sql: str | None = None  # groups: the query, aggregate: the state, of those keys only
    bounds_sql: str | None = None  # aggregate, groups: count and time bounds of those keys
    #: groups over a join: affected_sql, groups_sql and bounds_sql for a refresh in which only
    #: the first table (the facts) changed, without the branches of the others
    fact_only: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def state_table(name: str) -> exp.Table:
    """`wanka."dt_<name>_state"`, where an aggregate plan keeps its per-group state."""
    return exp.Table(
        this=exp.to_identifier(f"dt_{name}_state", quoted=True), db=exp.to_identifier("wanka")
    )


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
    query = select.sql("duckdb")
    sources = source_tables(select)
    if mode == "full":
        return Plan("full", "refresh_mode = 'full' was asked for", sources, query)
    if not isinstance(select, exp.Select):
        set_op = "set operations (UNION, EXCEPT, INTERSECT) are refreshed fully for now"
        return Plan("full", set_op, sources, query)
    kind, reason = classify(select, TRACKED, dynamic)
    reason_text: str | None = reason
    if kind != "full" and con is not None:
        found = nondeterminism_reason(select, con)
        if found:
            kind, reason_text = "full", found
    joined = len(tables_of(select)) > 1
    if kind == "append":
        delta = join_delta(select) if joined else restrict_to_delta(select)
        return Plan(kind, None, sources, query, delta_sql=delta.sql("duckdb"))
    if kind in ("aggregate", "groups") and -1 in key_positions(select):
        keys = "every GROUP BY key must be a column of the result to rewrite its rows"
        return Plan("full", keys, sources, query)
    not_null = _not_null(con, select) if joined else _not_null(con, sources[0])
    if kind == "groups":
        fact = sources[0] if joined else None
        fact_only = (
            {
                "affected_sql": affected_keys(select, dynamic, fact).sql("duckdb"),
                "groups_sql": restrict_to_groups(select, not_null, dynamic, fact).sql("duckdb"),
                "bounds_sql": bounds_query(select, not_null, dynamic, fact).sql("duckdb"),
            }
            if fact
            else {}
        )
        return Plan(
            kind,
            None,
            sources,
            query,
            key_positions=key_positions(select),
            affected_sql=affected_keys(select, dynamic).sql("duckdb"),
            groups_sql=restrict_to_groups(select, not_null, dynamic).sql("duckdb"),
            bounds_sql=bounds_query(select, not_null, dynamic).sql("duckdb"),
            fact_only=fact_only,
        )
    if kind == "aggregate":
        table = state_table(name)
        agg = plan_aggregate(select, table)
        state = cast(exp.Select, parse_select(agg.state_sql))
        return Plan(
            kind,
            None,
            sources,
            query,
            delta_sql=agg.delta_sql,
            state_sql=agg.state_sql,
            merge_sql=merge_sql(agg, table),
            visible_sql=agg.visible_sql,
            key_positions=agg.key_positions,
            affected_sql=affected_keys(select).sql("duckdb"),
            groups_sql=restrict_to_groups(state, not_null).sql("duckdb"),
            bounds_sql=bounds_query(select, not_null).sql("duckdb"),
        )
    return Plan("full", reason_text, sources, query)


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
    return frozenset(found)
