"""Recompute the affected groups of a 'groups' or 'aggregate' plan, and trim the change logs.

The affected groups are the keys of the rows inserted since the watermark and of the rows
updated or deleted since it (`plan.affected_sql`, see warehouse.dynamic.plan.groups). Their
visible rows are deleted and the defining query restricted to them is inserted again; for an
aggregate plan their state rows are rebuilt the same way first, and the visible rows are read
back from the state (`__wm = $hi`). Runs inside the refresh's transaction.
"""

from __future__ import annotations

from typing import Any

import duckdb
from sqlglot import exp

from warehouse.dynamic.catalog import DynamicTable
from warehouse.dynamic.plan import state_table
from warehouse.dynamic.plan.groups import changes_table


def count_rows(
    cur: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> int:
    """The first value of a statement's result as an int (a count, or rows a DML changed)."""
    rows = cur.execute(sql, params).fetchall() if params else cur.execute(sql).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def _match(columns: list[str], alias: str) -> str:
    """`<alias>.<column i> IS NOT DISTINCT FROM d.k<i>` for each key, ANDed."""
    return " AND ".join(
        exp.NullSafeEQ(
            this=exp.column(c, alias, quoted=True), expression=exp.column(f"k{i}", "d")
        ).sql("duckdb")
        for i, c in enumerate(columns)
    )


#: (name, query, keys query) -> the DELETE of those keys' visible rows, built once per process
#: so a refresh does not ask DuckDB for the table's columns each time.
_DELETE_KEYS: dict[tuple[str, str, str], str] = {}


def delete_keys_sql(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, target: str, keys_sql: str
) -> str:
    """DELETE of the visible rows whose group keys `keys_sql` lists (as columns k0, k1, ...)."""
    plan = dt.plan
    cached = _DELETE_KEYS.get((dt.name, plan.query, keys_sql))
    if cached is None:
        columns = [d[0] for d in cur.execute(f"SELECT * FROM {target} LIMIT 0").description]
        keys = [columns[p] for p in plan.key_positions]
        cached = f"DELETE FROM {target} AS v USING ({keys_sql}) AS d WHERE " + _match(keys, "v")
        _DELETE_KEYS[(dt.name, plan.query, keys_sql)] = cached
    return cached


def can_recompute(dt: DynamicTable) -> bool:
    """Whether the plan recomputes affected groups (plans stored before 0007 cannot)."""
    return dt.plan.kind in ("aggregate", "groups") and bool(
        dt.plan.affected_sql and dt.plan.groups_sql and dt.plan.bounds_sql
    )


#: A full refresh replaces recomputing the affected groups when they are at least this share of
#: the table's current groups. Recomputing a group costs more than computing it in a full
#: refresh — its keys are found from the change window, its old rows deleted one group at a
#: time through a join, its source rows read again through a semi-join — so once about half the
#: groups are affected the full refresh, one DELETE and one plain GROUP BY, is the cheaper one.
#: Measured in bench/bench_dynamic.py's count(DISTINCT) rollup: a 0.1 % append touches ~555 of
#: 3,722 groups (15 %) and recomputing them took 65 ms against 40 ms for a full refresh (1.6x),
#: so the break-even lies below 15 %; a tenth keeps a margin for cheaper per-group queries.
FULL_SHARE = 0.1

#: ... but only on a table of at least this many groups (visible rows), or over a source of at
#: least FULL_MIN_ROWS rows. Below both either refresh takes a few milliseconds, dominated by
#: per-statement overhead rather than by the groups, so the rule would save nothing
#: measurable; staying on the affected-groups path there keeps small tables' refreshes
#: incremental as before (and that path exercised by the incremental == full invariant tests,
#: which assert these plans never fall back to full).
FULL_MIN_GROUPS = 1000

#: Source rows from which the share rule applies whatever the number of groups (a daily
#: rollup per cluster has few groups over many rows: recomputing 3 of its 16 groups reads a
#: fifth of the rows again through a semi-join), and from which a change on a joined table
#: refreshes a join fully (joined_side_is_costly).
FULL_MIN_ROWS = 100_000


def affected_groups(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, high: int
) -> tuple[int, dict[str, Any]]:
    """How many groups of `dt` the changes in (watermark, high] affect, and their time bounds."""
    plan = dt.plan
    assert plan.bounds_sql is not None
    bounds = cur.execute(plan.bounds_sql, {"lo": dt.watermark, "hi": high})
    names = [d[0] for d in bounds.description]
    found = dict(zip(names, bounds.fetchall()[0], strict=True))
    return int(found.pop("groups")), found


def full_is_cheaper(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, target: str, groups: int
) -> str | None:
    """The reason to refresh fully instead of recomputing `groups` groups, or None.

    The table's current groups are its visible rows (one per group; with a HAVING, fewer,
    which only makes the rule fire sooner). count(*) of a table is cheap next to either refresh.
    """
    if groups == 0:
        return None
    current = count_rows(cur, f"SELECT count(*) FROM {target}", {})
    if groups < FULL_SHARE * current:
        return None
    if current < FULL_MIN_GROUPS and _source_rows(cur, dt) < FULL_MIN_ROWS:
        return None
    return f"{groups} of {current} groups affected: a full refresh is cheaper than recomputing them"


def _source_rows(cur: duckdb.DuckDBPyConnection, dt: DynamicTable) -> int:
    """Rows of the first table the query reads (the facts of a join)."""
    fact = exp.Table(this=exp.to_identifier(dt.plan.sources[0], quoted=True), db="main")
    return count_rows(cur, f"SELECT count(*) FROM {fact.sql('duckdb')}")


def joined_side_is_costly(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, touched: set[str]
) -> str | None:
    """The reason to refresh a join fully after a change on a joined (dimension) table, or None.

    Finding the groups a dimension row's change touches reads every row of the fact table it
    joins (fact⁺ ⋈ δdimension), and recomputing them reads those rows again: more than the one
    pass of a full refresh. bench/bench_dynamic.py: one node moved on ~10M telemetry rows took
    175 ms through the groups against 60 ms fully. On a small fact table both are a few
    milliseconds and the affected-groups path stays (and stays tested).
    """
    plan = dt.plan
    if plan.kind != "groups" or len(plan.sources) < 2:
        return None
    fact, joined = plan.sources[0], sorted(touched & set(plan.sources[1:]))
    if not joined:
        return None
    rows = _source_rows(cur, dt)
    if rows < FULL_MIN_ROWS:
        return None
    return (
        f"{joined[0]} changed: the groups it touches are found only by reading all {rows:,} "
        f"rows of {fact}, so a full refresh is the cheaper"
    )


def recompute_groups(
    cur: duckdb.DuckDBPyConnection,
    dt: DynamicTable,
    target: str,
    high: int,
    affected: tuple[int, dict[str, Any]] | None = None,
) -> tuple[int, int, int]:
    """Rewrite the affected groups of `dt`: (rows inserted, rows deleted, groups).

    `affected` is `affected_groups(cur, dt, high)` when the caller has it already.
    """
    plan = dt.plan
    assert plan.affected_sql is not None and plan.groups_sql and plan.bounds_sql
    window: dict[str, Any] = {"lo": dt.watermark, "hi": high}
    groups, found = affected if affected is not None else affected_groups(cur, dt, high)
    if groups == 0:
        return 0, 0, 0
    ranged = {**window, **found}  # the time bounds of the affected buckets, for zone maps
    if plan.kind == "aggregate":
        assert plan.visible_sql is not None
        state = state_table(dt.name).sql("duckdb")
        keys = [f"k{i}" for i in range(len(plan.key_positions))]
        cur.execute(
            f"DELETE FROM {state} AS s USING ({plan.affected_sql}) AS d WHERE {_match(keys, 's')}",
            window,
        )
        cur.execute(
            f"INSERT INTO {state} SELECT *, CAST($hi AS BIGINT) AS __wm FROM ({plan.groups_sql})",
            ranged,
        )
        deleted = count_rows(cur, delete_keys_sql(cur, dt, target, plan.affected_sql), window)
        inserted = count_rows(cur, f"INSERT INTO {target} {plan.visible_sql}", {"hi": high})
        return inserted, deleted, groups
    deleted = count_rows(cur, delete_keys_sql(cur, dt, target, plan.affected_sql), window)
    inserted = count_rows(cur, f"INSERT INTO {target} SELECT * FROM ({plan.groups_sql})", ranged)
    return inserted, deleted, groups


def trim_changes(cur: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
    """Delete the logged rows of `tables` that every dynamic table reading them has seen.

    `tables` are tables with a change log: base tables and dynamic tables others read. A table
    no dynamic table reads keeps nothing: a dynamic table created later starts with a full
    refresh. Called at the end of a successful refresh, in its transaction.
    """
    for table in tables:
        cur.execute(
            f"DELETE FROM {changes_table(table).sql('duckdb')} WHERE seq <= ("
            "SELECT coalesce(min(coalesce(watermark, 0)), 9223372036854775807) "
            "FROM wanka.dynamic_tables WHERE list_contains(sources, $t))",
            {"t": table},
        )
