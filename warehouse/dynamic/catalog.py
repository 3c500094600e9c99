"""The definitions of dynamic tables, kept in `wanka.dynamic_tables`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import duckdb

from warehouse.dynamic.plan.kinds import Plan, from_json, to_json
from warehouse.errors import UserError

MODES = ("auto", "incremental", "full")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class DynamicTable:
    """One row of wanka.dynamic_tables, as the refresh needs it."""

    name: str
    definition: str
    freshness: str
    refresh_mode: str
    resolved_mode: str
    reason: str | None
    sources: list[str]
    watermark: int
    plan: Plan
    state: str | None


def check_name(name: str) -> str:
    """A dynamic table name: a plain identifier, kept lower-case."""
    if not _NAME.fullmatch(name):
        raise UserError(f"dynamic table name {name!r} must be a plain identifier")
    return name.lower()


def check_freshness(con: duckdb.DuckDBPyConnection, value: str) -> str:
    """'downstream' or a DuckDB INTERVAL text such as '5 minutes'."""
    if value.strip().lower() == "downstream":
        return "downstream"
    try:
        seconds = con.execute("SELECT epoch(CAST(? AS INTERVAL))", [value]).fetchall()[0][0]
    except duckdb.Error:
        seconds = None
    if seconds is None or seconds <= 0:
        raise UserError(
            f"freshness {value!r} is not a positive interval like '5 minutes' or 'downstream'"
        )
    return value.strip()


def check_mode(value: str) -> str:
    mode = value.strip().lower()
    if mode not in MODES:
        raise UserError(f"refresh_mode {value!r} is not one of {', '.join(MODES)}")
    return mode


def names(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    return frozenset(r[0] for r in con.execute("SELECT name FROM wanka.dynamic_tables").fetchall())


def load(con: duckdb.DuckDBPyConnection, name: str) -> DynamicTable:
    rows = con.execute(
        "SELECT name, definition, freshness, refresh_mode, resolved_mode, refresh_mode_reason, "
        "sources, coalesce(watermark, 0), plan, state FROM wanka.dynamic_tables WHERE name = ?",
        [name],
    ).fetchall()
    if not rows:
        raise UserError(f"no dynamic table named {name}")
    r = rows[0]
    plan = from_json(json.loads(r[8]))
    return DynamicTable(r[0], r[1], r[2], r[3], r[4], r[5], list(r[6] or []), r[7], plan, r[9])


def insert(
    con: duckdb.DuckDBPyConnection, name: str, freshness: str, mode: str, plan: Plan
) -> None:
    con.execute(
        "INSERT INTO wanka.dynamic_tables (name, definition, freshness, refresh_mode, "
        "resolved_mode, refresh_mode_reason, created_at, sources, watermark, plan, state) "
        "VALUES (?, ?, ?, ?, ?, ?, now(), ?, 0, ?, 'active')",
        [
            name,
            plan.query,
            freshness,
            mode,
            plan.kind,
            plan.reason,
            list(plan.sources),
            _plan_json(plan),
        ],
    )


def update(con: duckdb.DuckDBPyConnection, name: str, **values: Any) -> None:
    """Set columns of one definition (column names are this module's, never user input)."""
    if "plan" in values:
        values["plan"] = _plan_json(values["plan"])
    assignments = ", ".join(f"{column} = ?" for column in values)
    con.execute(
        f"UPDATE wanka.dynamic_tables SET {assignments} WHERE name = ?", [*values.values(), name]
    )


def consumers(con: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """Dynamic tables that read `name`."""
    rows = con.execute(
        "SELECT name FROM wanka.dynamic_tables WHERE list_contains(sources, ?) ORDER BY name",
        [name],
    ).fetchall()
    return [r[0] for r in rows]


def _plan_json(plan: Plan) -> str:
    return json.dumps(to_json(plan))
