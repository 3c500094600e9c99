"""Which dynamic tables are due, in dependency order, and refreshing them once (`wanka refresh`).

A table is due when it never refreshed or `last_refresh_at + freshness < now()`; a
'downstream' table is due when a due table reads it. Sources refresh before their consumers.
"""

from __future__ import annotations

import duckdb

from warehouse.dynamic import catalog
from warehouse.dynamic.history import RefreshResult
from warehouse.dynamic.refresh import refresh
from warehouse.errors import WankaError


def dependency_order(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every dynamic table, each after the dynamic tables it reads."""
    rows = con.execute("SELECT name, sources FROM wanka.dynamic_tables ORDER BY name").fetchall()
    reads = {name: [s for s in (sources or []) if s != name] for name, sources in rows}
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in reads:
            return
        for source in reads[name]:
            visit(source)
        order.append(name)

    for name in reads:
        visit(name)
    return order


def due(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Tables due for a refresh now, in dependency order."""
    rows = con.execute(
        "SELECT name, freshness = 'downstream', last_refresh_at IS NULL OR "
        "(freshness <> 'downstream' AND last_refresh_at + CAST(freshness AS INTERVAL) < now()), "
        "sources FROM wanka.dynamic_tables"
    ).fetchall()
    wanted = {name for name, downstream, late, _ in rows if late and not downstream}
    sources = {name: set(s or []) for name, _, _, s in rows}
    changed = True
    while changed:  # a downstream table a due table reads is due too
        needed = set().union(*(sources[n] for n in wanted)) if wanted else set()
        changed = bool((needed & sources.keys()) - wanted)
        wanted |= needed & sources.keys()
    return [n for n in dependency_order(con) if n in wanted]


def refresh_once(
    con: duckdb.DuckDBPyConnection, name: str | None = None, *, full: bool = False
) -> list[RefreshResult | WankaError]:
    """Refresh `name` (or every due table) once; failures are returned, not raised."""
    names = [catalog.check_name(name)] if name else due(con)
    if name:
        catalog.load(con, names[0])  # an unknown name is a usage error
    done: list[RefreshResult | WankaError] = []
    for each in names:
        try:
            done.append(refresh(con, each, full=full))
        except WankaError as error:
            done.append(error)
    return done
