"""Rewrite step: recompute only the groups that rows inserted, updated or deleted belong to.

The affected groups of a refresh are the GROUP BY keys of the rows inserted since the watermark
(`$lo < batch_id <= $hi`) and of the rows logged in `wanka."changes_<table>"` since it (`seq >
$lo`: the old rows of updates and deletes, the new rows of updates; 0007). Both sides keep the
query's WHERE: a row it filters out belongs to no group. The defining query restricted to those
keys (a CTE `__g` and a semi-join with IS NOT DISTINCT FROM, so a NULL key is a group too)
gives their rows.

When a key is a time bucket of a NOT NULL column (time_bucket, date_trunc), the restriction also
bounds that column by the smallest and largest affected bucket (parameters the refresh reads
with `bounds_query` first), so DuckDB's zone maps skip the row groups of other buckets.
"""

from __future__ import annotations

from sqlglot import exp

from warehouse.dynamic.plan.delta import restrict_to_delta
from warehouse.dynamic.plan.joins import SEQ_COLUMN, affected_join_keys, changes_table, tables_of

AFFECTED = "__g"

__all__ = ["affected_keys", "bounds_query", "changes_table", "restrict_to_groups"]


def _keys(select: exp.Select) -> list[exp.Expression]:
    return list(select.args["group"].expressions)


def affected_keys(
    select: exp.Select, dynamic: frozenset[str] = frozenset(), only: str | None = None
) -> exp.Query:
    """One row per affected group: the key expressions as k0, k1, ... (DISTINCT).

    A query that joins tables or reads a dynamic table (in `dynamic`) takes the join rule of
    warehouse.dynamic.plan.joins (`only`: the branches of that table alone); a single base
    table the simpler union below.
    """
    tables = tables_of(select)
    assert tables, "the planner sends only queries over tables here"
    table = tables[0]
    base = exp.select(*[exp.alias_(k.copy(), f"k{i}") for i, k in enumerate(_keys(select))])
    base.set("from_", exp.From(this=table.copy()))
    if select.args.get("joins"):
        base.set("joins", [j.copy() for j in select.args["joins"]])
    if select.args.get("where") is not None:
        base.set("where", select.args["where"].copy())
    if len(tables) > 1 or table.name.lower() in dynamic:
        return affected_join_keys(base, dynamic, only)
    inserted = restrict_to_delta(base)
    changed = base.copy()
    log = changes_table(table.name)
    log.set("alias", exp.TableAlias(this=exp.to_identifier(table.alias_or_name)))
    changed.set("from_", exp.From(this=log))
    seq = exp.column(SEQ_COLUMN, table=table.alias_or_name)
    changed = changed.where(exp.GT(this=seq, expression=exp.Placeholder(this="lo")))
    return exp.union(inserted, changed, distinct=True)


def bucket_width(key: exp.Expression) -> tuple[exp.Column, exp.Expression] | None:
    """(column, width) when `key` is time_bucket(width, column) or date_trunc(unit, column)."""
    if isinstance(key, exp.DateBin):
        args = [key.this, key.expression]
        columns = [a for a in args if isinstance(a, exp.Column)]
        widths = [a for a in args if isinstance(a, exp.Interval)]
        if len(columns) == 1 and len(widths) == 1 and not key.args.get("zone"):
            return columns[0], widths[0]
    if isinstance(key, exp.TimestampTrunc | exp.DateTrunc) and isinstance(key.this, exp.Column):
        unit = key.args.get("unit")
        if unit is not None:
            return key.this, exp.Interval(this=exp.Literal.string("1"), unit=exp.var(unit.name))
    return None


def _bucketed(
    select: exp.Select, not_null: frozenset[str]
) -> list[tuple[int, exp.Column, exp.Expression]]:
    """(key index, column, bucket width) of each time-bucket key over a NOT NULL column."""
    found = []
    for i, key in enumerate(_keys(select)):
        bucket = bucket_width(key)
        if bucket is None:
            continue
        column = bucket[0]
        name = f"{column.table}.{column.name}" if column.table else column.name
        if name.lower() in not_null:
            found.append((i, *bucket))
    return found


def bounds_query(
    select: exp.Select,
    not_null: frozenset[str] = frozenset(),
    dynamic: frozenset[str] = frozenset(),
    only: str | None = None,
) -> exp.Select:
    """How many groups are affected and, per time-bucket key i, `k<i>_lo` / `k<i>_hi`.

    Every value v of a bucket b has b <= v < b + width, so the rows of the affected groups have
    `k<i>_lo <= column < k<i>_hi`. The refresh binds these as parameters of `restrict_to_groups`:
    a literal range reaches the scan and its zone maps, a scalar subquery does not.
    """
    columns = [exp.alias_(exp.Count(this=exp.Star()), "groups")]
    for i, _column, width in _bucketed(select, not_null):
        key = exp.column(f"k{i}", AFFECTED)
        columns.append(exp.alias_(exp.Min(this=key), f"k{i}_lo"))
        high = exp.Add(this=exp.Max(this=key.copy()), expression=width.copy())
        columns.append(exp.alias_(high, f"k{i}_hi"))
    return exp.select(*columns).from_(affected_keys(select, dynamic, only).subquery(AFFECTED))


def restrict_to_groups(
    select: exp.Select,
    not_null: frozenset[str] = frozenset(),
    dynamic: frozenset[str] = frozenset(),
    only: str | None = None,
) -> exp.Select:
    """A copy of `select` reading only the rows of the affected groups.

    `not_null` names the columns known NOT NULL (as `alias.column` in a join: an inner join
    never NULL-extends a row): only a time bucket of one of those also gets the range
    `$k<i>_lo <= column < $k<i>_hi` (a NULL value would fall outside any range), with the
    bounds from `bounds_query`.
    """
    keys = _keys(select)
    match = exp.and_(
        *[
            exp.NullSafeEQ(this=exp.column(f"k{i}", AFFECTED), expression=k.copy())
            for i, k in enumerate(keys)
        ]
    )
    semi = exp.select("1").from_(AFFECTED).where(match)
    restricted = select.copy().with_(AFFECTED, as_=affected_keys(select, dynamic, only))
    restricted = restricted.where(exp.Exists(this=semi))
    for i, column, _width in _bucketed(select, not_null):
        low = exp.GTE(this=column.copy(), expression=exp.Placeholder(this=f"k{i}_lo"))
        high = exp.LT(this=column.copy(), expression=exp.Placeholder(this=f"k{i}_hi"))
        restricted = restricted.where(exp.and_(low, high))
    return restricted
