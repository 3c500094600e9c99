"""Whether a dynamic table keeps its rows when a source drops old ones by retention.

`warehouse.tsdb.retention` drops raw samples older than a rule; what a dynamic table derived
from them stays. A FULL refresh of a dynamic table reading the table recomputes only the buckets
the table still holds whole (`held_range`): from the first bucket boundary at or after
`held_from`; its rows before it stay as they were.

A rule is refused (`set_rule`, what every face calls) when a dynamic table reading the table
could not keep its rows: it has no time bucket key over the table's time column, or its buckets
are wider than the rule keeps.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from warehouse.dynamic import catalog
from warehouse.dynamic.catalog import DynamicTable
from warehouse.dynamic.plan.groups import bucket_width
from warehouse.dynamic.plan.joins import tables_of
from warehouse.errors import UserError
from warehouse.tsdb import retention
from warehouse.tsdb.retention import TIME_TABLES


def set_rule(
    cur: duckdb.DuckDBPyConnection, table: str, keep: str | None, user: str | None = None
) -> str:
    """`warehouse.tsdb.retention.set_rule`, refused first where a dynamic table reading `table`
    could not keep its rows under it; what was done, in words."""
    name = retention.time_table(cur, table)
    if keep is None:
        return retention.remove_rule(cur, name)
    interval = retention.keep_interval(cur, keep)
    _refuse_losing(cur, name, keep, interval)
    return retention.store_rule(cur, name, keep, interval, user)


def _refuse_losing(
    cur: duckdb.DuckDBPyConnection, table: str, keep: str, interval: timedelta
) -> None:
    """Raise when a dynamic table reading `table` would lose derived rows to a rule keeping
    `interval`: it has no time bucket key over the table, or buckets wider than the rule."""
    for dt in _readers(cur, table):
        found = bucket_of(dt, table)
        if found is None:
            raise UserError(
                f"retention on {table} refused: dynamic table {dt.name} reads it without a time "
                f"bucket key over {table}.{TIME_TABLES[table][0]}, so a full refresh after the "
                "drop would lose what it derived from the dropped rows; give it such a key "
                "(time_bucket or date_trunc in GROUP BY) or drop it first"
            )
        written = found[2]
        if retention.as_timedelta(cur.execute(f"SELECT {written}").fetchall()[0][0]) > interval:
            raise UserError(
                f"retention {keep!r} on {table} is shorter than the {written} buckets of "
                f"dynamic table {dt.name}: its last bucket would lose rows while still filling"
            )


def bucket_of(dt: DynamicTable, table: str) -> tuple[int, exp.Expression, str] | None:
    """(key index, key, its width as SQL) of `dt`'s time bucket key over `table`'s time column,
    or None."""
    select = sqlglot.parse_one(dt.plan.query, read="duckdb")
    if not isinstance(select, exp.Select) or not select.args.get("group"):
        return None
    column = TIME_TABLES[table][0]
    names = {t.alias_or_name.lower() for t in tables_of(select) if t.name.lower() == table}
    for i, key in enumerate(select.args["group"].expressions):
        bucket = bucket_width(key)
        if bucket is None:
            continue
        col, width = bucket
        if col.name.lower() == column and (not col.table or col.table.lower() in names):
            return i, key, width.sql("duckdb")
    return None


def held_range(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable
) -> tuple[dict[str, Any], str] | None:
    """For a FULL refresh of `dt`: the bucket boundary from which its sources are held whole
    ({'key': index, 'from': boundary}) and the reason to record, or None when no source of it
    has dropped rows. Raises when one has and `dt` cannot be recomputed from a boundary."""
    for table in dt.sources:
        if table not in TIME_TABLES:
            continue
        held = retention.held_from(cur, table)
        if held is None:
            continue
        found = bucket_of(dt, table)
        if found is None:
            raise UserError(
                f"{dt.name} cannot be recomputed: {table} holds rows only from "
                f"{held:%Y-%m-%d %H:%M} (retention), and without a time bucket key over it a "
                "full refresh would erase what it derived from the dropped rows"
            )
        index, key, written = found
        boundary = _boundary(cur, key, held)
        reason = (
            f"recomputed from {boundary:%Y-%m-%d %H:%M %Z} on: {table} holds rows only from "
            f"{held:%Y-%m-%d %H:%M %Z} (retention); earlier {written} buckets kept as they were"
        )
        return {"key": index, "from": boundary}, reason
    return None


def _boundary(cur: duckdb.DuckDBPyConnection, key: exp.Expression, held: datetime) -> datetime:
    """The first bucket start of `key` at or after `held`: the bucket of `held`, or the next
    when `held` falls inside it (DuckDB computes both, so buckets align as the query's do)."""
    return _bucket(cur, key, held, after=True)


def bucket_start(cur: duckdb.DuckDBPyConnection, key: exp.Expression, at: datetime) -> datetime:
    """The start of the bucket of `key` (a time bucket key) that holds `at`."""
    return _bucket(cur, key, at, after=False)


def _bucket(
    cur: duckdb.DuckDBPyConnection, key: exp.Expression, at: datetime, after: bool
) -> datetime:
    bucket = key.copy()
    column = next(bucket.find_all(exp.Column))
    column.replace(exp.cast(exp.Placeholder(this="at"), exp.DataType.build("TIMESTAMPTZ")))
    width = bucket_width(key)
    assert width is not None
    later = f"b + {width[1].sql('duckdb')}" if after else "b"
    sql = (
        f"SELECT CASE WHEN b < $at THEN {later} ELSE b END "
        f"FROM (SELECT {bucket.sql('duckdb')} AS b)"
    )
    found: datetime = cur.execute(sql, {"at": at}).fetchall()[0][0]
    return found


def _readers(cur: duckdb.DuckDBPyConnection, table: str) -> list[DynamicTable]:
    return [
        dt
        for name in sorted(catalog.names(cur))
        if table in (dt := catalog.load(cur, name)).sources
    ]
