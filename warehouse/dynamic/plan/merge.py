"""Rewrite step: the MERGE that folds a pre-aggregated delta into an aggregate state."""

from __future__ import annotations

from sqlglot import exp

from warehouse.dynamic.plan.aggregate import AggregatePlan


def _combine(kind: str, name: str, by: str | None = None) -> exp.Expression:
    old, new = exp.column(name, "s"), exp.column(name, "d")
    if by is not None:
        # arg_max: the value whose key is the larger (on a tie the value already held stays);
        # a part whose key is NULL saw no value. SET reads the row as it was before the MERGE.
        old_key, new_key = exp.column(by, "s"), exp.column(by, "d")
        wins = exp.GT if kind == "arg_max" else exp.LT
        newer = exp.or_(
            exp.Is(this=old_key, expression=exp.Null()),
            wins(this=new_key, expression=old_key.copy()),
        )
        return exp.If(this=newer, true=new, false=old)
    if kind in ("min", "max"):
        # DuckDB's least/greatest skip NULLs; sqlglot's Least would render a NULL-propagating CASE
        return exp.Anonymous(this="least" if kind == "min" else "greatest", expressions=[old, new])
    # a sum over no non-NULL values is NULL: NULL + x must be x, not NULL
    return exp.Coalesce(
        this=exp.Add(this=old, expression=new), expressions=[old.copy(), new.copy()]
    )


def merge(plan: AggregatePlan, state_table: exp.Table) -> exp.Merge:
    """MERGE the delta state (`plan.delta`, one row per key) into the state table.

    Keys match NULL-safely (a NULL host is a group too); groups the state lacks are inserted;
    every group the delta touches gets `__wm = $hi`, which is how the refresh finds them.
    """
    on = (
        exp.and_(
            *(
                exp.NullSafeEQ(this=exp.column(k, "s"), expression=exp.column(k, "d"))
                for k in plan.keys
            )
        )
        if plan.keys
        else exp.true()
    )
    names = [*plan.keys, "__rows", *(c.name for c in plan.columns)]
    combined = [("__rows", "add", None), *((c.name, c.combine, c.by) for c in plan.columns)]
    sets = [
        exp.EQ(this=exp.column(n), expression=_combine(kind, n, by)) for n, kind, by in combined
    ]
    sets.append(exp.EQ(this=exp.column("__wm"), expression=exp.Placeholder(this="hi")))
    insert = exp.Insert(
        this=exp.Tuple(expressions=[exp.column(n) for n in [*names, "__wm"]]),
        expression=exp.Tuple(
            expressions=[*(exp.column(n, "d") for n in names), exp.Placeholder(this="hi")]
        ),
    )
    return exp.Merge(
        this=state_table.copy().as_("s"),
        using=plan.delta.subquery("d"),
        on=on,
        whens=exp.Whens(
            expressions=[
                exp.When(matched=True, source=False, then=exp.Update(expressions=sets)),
                exp.When(matched=False, source=False, then=insert),
            ]
        ),
    )
