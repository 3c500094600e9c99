"""Rewrite step: the MERGE that folds a pre-aggregated delta into an aggregate state."""

from __future__ import annotations

from sqlglot import exp

from warehouse.dynamic.plan.aggregate import AggregatePlan


def _combine(kind: str, name: str) -> exp.Expression:
    old, new = exp.column(name, "s"), exp.column(name, "d")
    if kind in ("min", "max"):
        # DuckDB's least/greatest skip NULLs; sqlglot's Least would render a NULL-propagating CASE
        return exp.Anonymous(this="least" if kind == "min" else "greatest", expressions=[old, new])
    # a sum over no non-NULL values is NULL: NULL + x must be x, not NULL
    return exp.Coalesce(
        this=exp.Add(this=old, expression=new), expressions=[old.copy(), new.copy()]
    )


def merge_sql(plan: AggregatePlan, state_table: exp.Table) -> str:
    """MERGE the delta state (`plan.delta_sql`, one row per key) into the state table.

    Keys match NULL-safely (a NULL host is a group too); groups the state lacks are inserted.
    """
    target = state_table.sql("duckdb")
    on = (
        " AND ".join(
            exp.NullSafeEQ(this=exp.column(k, "s"), expression=exp.column(k, "d")).sql("duckdb")
            for k in plan.keys
        )
        or "TRUE"
    )
    sets = [("__rows", _combine("add", "__rows"))]
    sets += [(c.name, _combine(c.combine, c.name)) for c in plan.columns]
    update = ", ".join(f"{exp.to_identifier(n).sql('duckdb')} = {e.sql('duckdb')}" for n, e in sets)
    names = [*plan.keys, "__rows", *(c.name for c in plan.columns)]
    insert_cols = ", ".join(exp.to_identifier(n).sql("duckdb") for n in [*names, "__wm"])
    insert_vals = ", ".join([*(exp.column(n, "d").sql("duckdb") for n in names), "$hi"])
    return (
        f"MERGE INTO {target} AS s USING ({plan.delta_sql}) AS d ON {on} "
        f"WHEN MATCHED THEN UPDATE SET {update}, __wm = $hi "
        f"WHEN NOT MATCHED THEN INSERT ({insert_cols}) VALUES ({insert_vals})"
    )
