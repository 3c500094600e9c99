"""Planner step: find functions whose result can change between refreshes.

sqlglot parses `now()` and UDF calls as `exp.Anonymous`, so expression classes alone miss them:
names are resolved against DuckDB's `duckdb_functions()` stability. A function counts as
deterministic when one of its overloads is CONSISTENT (the engine pins TimeZone to UTC, which is
why time_bucket on TIMESTAMPTZ is also listed CONSISTENT_WITHIN_QUERY), or when it is a wanka
model macro in `udfs.registry.DETERMINISTIC` or an AI function macro (DuckDB reports macro
stability as NULL; a registered model answers at temperature 0 and each answer is cached, so
a row's answer does not change between refreshes: warehouse/ai).
"""

from __future__ import annotations

import duckdb
from sqlglot import exp

from udfs.registry import DETERMINISTIC
from warehouse.ai.functions import SQL_NAMES as AI_FUNCTIONS

#: Classes sqlglot gives non-deterministic functions it knows by name.
_VOLATILE_CLASSES: dict[type[exp.Expression], str] = {
    exp.Rand: "random()",
    exp.CurrentTimestamp: "current_timestamp",
    exp.CurrentDate: "current_date",
    exp.CurrentTime: "current_time",
    exp.Uuid: "uuid()",
}


def nondeterminism_reason(select: exp.Expression, con: duckdb.DuckDBPyConnection) -> str | None:
    """Why `select` is not deterministic, or None when every function it calls is."""
    for node in select.walk():
        for cls, label in _VOLATILE_CLASSES.items():
            if isinstance(node, cls):
                return f"{label} is not deterministic: its result changes between refreshes"
    names = sorted({n.name.lower() for n in select.find_all(exp.Anonymous)})
    if not names:
        return None
    rows = con.execute(
        "SELECT function_name, bool_or(stability = 'CONSISTENT'), "
        "string_agg(DISTINCT coalesce(stability, 'unknown'), '/') "
        "FROM duckdb_functions() WHERE lower(function_name) = ANY(?) GROUP BY 1",
        [names],
    ).fetchall()
    for name, consistent, stability in sorted(rows):
        if not consistent and name not in DETERMINISTIC and name not in AI_FUNCTIONS:
            return (
                f"{name}() is not deterministic (DuckDB stability {stability}): its result "
                "changes between refreshes"
            )
    return None
