"""Rewrite step: the groups a change touches when the query joins tables or reads a dynamic table.

For inner joins of tables T1..Tn the groups whose rows may differ after a change are the keys of
the join rows in which at least one table contributes a changed row:

    affected = ∪ over i of  T1⁺ ⋈ … ⋈ δTi ⋈ … ⋈ Tn⁺

where δT is the rows of T that changed since the watermark (inserted rows, plus the old and new
rows of updates and deletes from its change log) and T⁺ is T as it is now plus the old rows from
its log — so a group that lost its last row through a dimension change is found by the old row
it had. Reference tables (gpu_models, nic_models) change only when wanka reloads them, which
forces a full refresh, so they take part as they are. A dynamic table read by another one has no
batch ids: every row its refresh inserts or deletes is logged (warehouse.dynamic.chain), so its
δ is its log alone.

Append plans over joins use the classic delta rule instead, for inserts only:
Δ(T1 ⋈ … ⋈ Tn) = ∪ over i of  T1ᵒˡᵈ ⋈ … ⋈ ΔTi ⋈ Ti+1 ⋈ … ⋈ Tn, with Tᵒˡᵈ the rows of T with
`batch_id <= $lo`; an update or delete on any of them makes that refresh full, and it says so.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from warehouse.dynamic.plan.delta import BATCH_COLUMN
from warehouse.kernel.tables import REFERENCE

SEQ_COLUMN = "seq"
LOG_COLUMNS = ("seq", "kind")


def changes_table(table: str) -> exp.Table:
    """`wanka."changes_<table>"`: the logged rows of a table's updates and deletes (0007)."""
    return exp.Table(
        this=exp.to_identifier(f"changes_{table}", quoted=True), db=exp.to_identifier("wanka")
    )


def _window(column: exp.Column) -> exp.Condition:
    return exp.and_(
        exp.GT(this=column, expression=exp.Placeholder(this="lo")),
        exp.LTE(this=column.copy(), expression=exp.Placeholder(this="hi")),
    )


def _logged(table: str) -> exp.Select:
    """The rows logged for `table` since the watermark, without the log's own columns."""
    star = exp.Star(except_=[exp.column(c) for c in LOG_COLUMNS])
    return exp.select(star).from_(changes_table(table)).where(_window(exp.column(SEQ_COLUMN)))


def _base(table: exp.Table) -> exp.Table:
    return exp.Table(this=exp.to_identifier(table.name), db=table.args.get("db"))


def changed_rows(table: exp.Table, dynamic: frozenset[str]) -> exp.Query:
    """δT: rows inserted in the window (base tables) and rows logged since the watermark."""
    logged = _logged(table.name.lower())
    if table.name.lower() in dynamic:
        return logged
    inserted = exp.select("*").from_(_base(table)).where(_window(exp.column(BATCH_COLUMN)))
    return exp.union(inserted, logged, distinct=False)


def with_old_rows(table: exp.Table) -> exp.Query:
    """T⁺: the rows of T now plus the old rows logged since the watermark."""
    now = exp.select("*").from_(_base(table))
    return exp.union(now, _logged(table.name.lower()), distinct=False)


def _old_rows(table: exp.Table) -> exp.Query:
    """Tᵒˡᵈ for the delta rule: the rows inserted up to the watermark."""
    old = exp.LTE(this=exp.column(BATCH_COLUMN), expression=exp.Placeholder(this="lo"))
    return exp.select("*").from_(_base(table)).where(old)


def _inserted_rows(table: exp.Table) -> exp.Query:
    return exp.select("*").from_(_base(table)).where(_window(exp.column(BATCH_COLUMN)))


def tables_of(select: exp.Select) -> list[exp.Table]:
    """The table occurrences of the FROM clause and its joins, in order."""
    found: list[exp.Table] = []
    from_ = select.args.get("from_") or select.args.get("from")
    for part in [from_, *(select.args.get("joins") or [])]:
        if part is not None and isinstance(part.this, exp.Table):
            found.append(part.this)
    return found


def _replace(
    select: exp.Select, replacement: Callable[[int, exp.Table], exp.Query | None]
) -> exp.Select:
    """A copy of `select` with table occurrence i replaced by `replacement(i, table)`."""
    copy = select.copy()
    for i, table in enumerate(tables_of(copy)):
        query = replacement(i, table)
        if query is not None:
            alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
            table.replace(exp.Subquery(this=query, alias=alias))
    return copy


def affected_join_keys(
    base: exp.Select, dynamic: frozenset[str], only: str | None = None
) -> exp.Query:
    """The union over changing tables i of `base` with δTi and every other table as T⁺.

    `base` selects the group keys (k0, ...) with the query's FROM, joins and WHERE. With
    `only`, just the branches of that table: the variant a refresh runs when no other table
    changed (an empty δ still costs a scan of the other tables).
    """
    tables = tables_of(base)
    branches: list[exp.Query] = []
    for i, table in enumerate(tables):
        if table.name.lower() in REFERENCE or only not in (None, table.name.lower()):
            continue

        def pick(j: int, t: exp.Table, i: int = i) -> exp.Query | None:
            if j == i:
                return changed_rows(t, dynamic)
            return None if t.name.lower() in REFERENCE else with_old_rows(t)

        branches.append(_replace(base, pick))
    union = branches[0]
    for branch in branches[1:]:
        union = exp.union(union, branch, distinct=True)
    return union if len(branches) > 1 else _distinct(union)


def _distinct(query: exp.Query) -> exp.Query:
    if isinstance(query, exp.Select):
        query.set("distinct", exp.Distinct())
    return query


def join_delta(select: exp.Select) -> exp.Query:
    """Δ of an inner-join projection for inserts: the delta rule over batch windows."""
    tables = tables_of(select)
    branches: list[exp.Query] = []
    for i, table in enumerate(tables):
        if table.name.lower() in REFERENCE:
            continue

        def pick(j: int, t: exp.Table, i: int = i) -> exp.Query | None:
            if t.name.lower() in REFERENCE or j > i:
                return None
            return _inserted_rows(t) if j == i else _old_rows(t)

        branches.append(_replace(select, pick))
    union = branches[0]
    for branch in branches[1:]:
        union = exp.union(union, branch, distinct=False)
    return union
