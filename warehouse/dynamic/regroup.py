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
from warehouse.dynamic.plan import TRACKED, state_table
from warehouse.dynamic.plan.groups import changes_table


def _count(cur: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> int:
    rows = cur.execute(sql, params).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def _match(columns: list[str], alias: str) -> str:
    """`<alias>.<column i> IS NOT DISTINCT FROM d.k<i>` for each key, ANDed."""
    return " AND ".join(
        exp.NullSafeEQ(
            this=exp.column(c, alias, quoted=True), expression=exp.column(f"k{i}", "d")
        ).sql("duckdb")
        for i, c in enumerate(columns)
    )


#: (name, query) -> the DELETE of the affected groups' visible rows, built once per process.
_DELETE_AFFECTED: dict[tuple[str, str], str] = {}


def _delete_visible_sql(cur: duckdb.DuckDBPyConnection, dt: DynamicTable, target: str) -> str:
    plan = dt.plan
    cached = _DELETE_AFFECTED.get((dt.name, plan.query))
    if cached is None:
        columns = [d[0] for d in cur.execute(f"SELECT * FROM {target} LIMIT 0").description]
        keys = [columns[p] for p in plan.key_positions]
        cached = f"DELETE FROM {target} AS v USING ({plan.affected_sql}) AS d WHERE " + _match(
            keys, "v"
        )
        _DELETE_AFFECTED[(dt.name, plan.query)] = cached
    return cached


def can_recompute(dt: DynamicTable) -> bool:
    """Whether the plan recomputes affected groups (plans stored before 0007 cannot)."""
    return dt.plan.kind in ("aggregate", "groups") and bool(
        dt.plan.affected_sql and dt.plan.groups_sql and dt.plan.bounds_sql
    )


def recompute_groups(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, target: str, high: int
) -> tuple[int, int, int]:
    """Rewrite the affected groups of `dt`: (rows inserted, rows deleted, groups)."""
    plan = dt.plan
    assert plan.affected_sql is not None and plan.groups_sql and plan.bounds_sql
    window: dict[str, Any] = {"lo": dt.watermark, "hi": high}
    bounds = cur.execute(plan.bounds_sql, window)
    names = [d[0] for d in bounds.description]
    found = dict(zip(names, bounds.fetchall()[0], strict=True))
    groups = int(found.pop("groups"))
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
        deleted = _count(cur, _delete_visible_sql(cur, dt, target), window)
        inserted = _count(cur, f"INSERT INTO {target} {plan.visible_sql}", {"hi": high})
        return inserted, deleted, groups
    deleted = _count(cur, _delete_visible_sql(cur, dt, target), window)
    inserted = _count(cur, f"INSERT INTO {target} SELECT * FROM ({plan.groups_sql})", ranged)
    return inserted, deleted, groups


def trim_changes(cur: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
    """Delete the logged rows of `tables` that every dynamic table reading them has seen.

    A table no dynamic table reads keeps nothing: a dynamic table created later starts with a
    full refresh. Called at the end of a successful refresh, in its transaction.
    """
    for table in tables:
        if table not in TRACKED:
            continue
        cur.execute(
            f"DELETE FROM {changes_table(table).sql('duckdb')} WHERE seq <= ("
            "SELECT coalesce(min(coalesce(watermark, 0)), 9223372036854775807) "
            "FROM wanka.dynamic_tables WHERE list_contains(sources, $t))",
            {"t": table},
        )
