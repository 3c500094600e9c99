"""Recompute the affected groups of a 'groups' or 'aggregate' plan, and trim the change logs.

The affected groups are the keys of the rows inserted since the watermark and of the rows
updated or deleted since it (the plan's `Recompute.affected`, see warehouse.dynamic.plan.groups).
Their visible rows are deleted and the defining query restricted to them is inserted again; for
an aggregate plan their state rows are rebuilt the same way first, and the visible rows are read
back from the state (`__wm = $hi`). The statements are `warehouse.dynamic.dml`'s; this module
decides when recomputing beats a full refresh. Runs inside the refresh's transaction.
"""

from __future__ import annotations

from typing import Any

import duckdb

from warehouse.dynamic import dml
from warehouse.dynamic.dml import RefreshSql, Regroup
from warehouse.dynamic.plan import Aggregate, Groups, Plan

#: A full refresh replaces recomputing the affected groups when they are at least this share of
#: the table's current groups. Recomputing a group costs more than computing it in a full
#: refresh — its keys are found from the change window, its old rows deleted one group at a
#: time through a join, its source rows read again through a semi-join — so once about half the
#: groups are affected the full refresh, one DELETE and one plain GROUP BY, is the cheaper one.
#: Measured in bench/bench_dynamic.py's count(DISTINCT) rollup: a 0.1 % append touches ~555 of
#: 3,722 groups (15 %) and recomputing them took 65 ms against 40 ms for a full refresh (1.6x),
#: so the break-even lies below 15 %; a tenth keeps a margin for cheaper per-group queries.
FULL_SHARE = 0.1

#: The share for a table whose changes all come from dynamic tables it reads (a chain). Its
#: sources are small and keyed (one row per group of the table below), so recomputing a group
#: reads a few rows; and a full refresh of it rewrites every row, which its own readers then
#: recompute in turn. bench/bench_dynamic.py's per-job tables: a 0.1 % telemetry append touches
#: ~22 % of job_gpu_usage_by_gpu's 11,300 groups; recomputing them took 69 ms against 110 ms
#: for a full refresh, and job_gpu_usage after it 36 ms against 50 ms.
CHAIN_FULL_SHARE = 0.5

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
    cur: duckdb.DuckDBPyConnection, regroup: Regroup, window: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """How many groups the changes in the window affect, and their time bounds."""
    found = regroup.bounds.row(cur, window)
    return int(found.pop("groups")), found


def full_is_cheaper(
    cur: duckdb.DuckDBPyConnection, sql: RefreshSql, groups: int, chained: bool = False
) -> str | None:
    """The reason to refresh fully instead of recomputing `groups` groups, or None; `chained`:
    every change came from a dynamic table this one reads (CHAIN_FULL_SHARE).

    The table's current groups are its visible rows (one per group; with a HAVING, fewer,
    which only makes the rule fire sooner). count(*) of a table is cheap next to either refresh.
    """
    if groups == 0:
        return None
    current = sql.count_visible.run(cur, {})
    if groups < (CHAIN_FULL_SHARE if chained else FULL_SHARE) * current:
        return None
    if current < FULL_MIN_GROUPS and sql.count_facts.run(cur, {}) < FULL_MIN_ROWS:
        return None
    return f"{groups} of {current} groups affected: a full refresh is cheaper than recomputing them"


def joined_side_is_costly(
    cur: duckdb.DuckDBPyConnection, plan: Plan, sql: RefreshSql, touched: set[str]
) -> str | None:
    """The reason to refresh a join fully after a change on a joined (dimension) table, or None.

    Finding the groups a dimension row's change touches reads every row of the fact table it
    joins (fact⁺ ⋈ δdimension), and recomputing them reads those rows again: more than the one
    pass of a full refresh. bench/bench_dynamic.py: one node moved on ~10M telemetry rows took
    175 ms through the groups against 60 ms fully. On a small fact table both are a few
    milliseconds and the affected-groups path stays (and stays tested).
    """
    if not isinstance(plan, Groups | Aggregate) or len(plan.sources) < 2:
        return None
    fact, joined = plan.sources[0], sorted(touched & set(plan.sources[1:]))
    if not joined:
        return None
    rows = sql.count_facts.run(cur, {})
    if rows < FULL_MIN_ROWS:
        return None
    return (
        f"{joined[0]} changed: the groups it touches are found only by reading all {rows:,} "
        f"rows of {fact}, so a full refresh is the cheaper"
    )


def recompute_groups(
    cur: duckdb.DuckDBPyConnection,
    regroup: Regroup,
    window: dict[str, Any],
    affected: tuple[int, dict[str, Any]],
) -> tuple[int, int, int]:
    """Rewrite the affected groups: (rows inserted, rows deleted, groups).

    `affected` is `affected_groups(cur, regroup, window)`: the groups and their time bounds,
    bound as parameters so DuckDB's zone maps skip the row groups of other buckets.
    """
    groups, bounds = affected
    if groups == 0:
        return 0, 0, 0
    values = {**window, **bounds}
    for each in regroup.state:
        each.run(cur, values)
    deleted = regroup.rewrite.delete.run(cur, values)
    inserted = regroup.rewrite.insert.run(cur, values)
    return inserted, deleted, groups


def trim_changes(cur: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
    """Delete the logged rows of `tables` that every dynamic table reading them has seen.

    `tables` are tables with a change log: base tables and dynamic tables others read. A table
    no dynamic table reads keeps nothing: a dynamic table created later starts with a full
    refresh. Called at the end of a successful refresh, in its transaction.
    """
    for table in tables:
        dml.trim(table).run(cur, {})
