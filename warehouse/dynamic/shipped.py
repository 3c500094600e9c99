"""The dynamic tables wanka ships, one CREATE DYNAMIC TABLE per file in `sql/dynamic/`."""

from __future__ import annotations

import re
from graphlib import TopologicalSorter
from pathlib import Path

from warehouse.kernel import catalog as sql_catalog
from warehouse.kernel.engine import Engine

# The dynamic-table machinery (sqlglot, the planner) is imported where a table is created or
# refreshed: every writing command checks for missing shipped tables, and most find none.


def shipped_folder() -> Path:
    """`sql/dynamic/` beside the schema steps (in a checkout or an installed wheel)."""
    return sql_catalog.migrations()[0].path.parent.parent / "dynamic"


def definition(path: Path) -> str:
    """The CREATE DYNAMIC TABLE statement of a shipped file, its `@include(...)` parts in."""
    return sql_catalog.expand_includes(path.read_text(encoding="utf-8"), path.parent)


def in_creation_order(paths: list[Path]) -> list[Path]:
    """The definitions in an order where each comes after the shipped tables it reads (a name
    of another file as a word of its SQL, comments aside); otherwise by name."""
    texts = {p.stem: re.sub(r"--[^\n]*", "", definition(p)) for p in paths}
    graph = {
        name: {other for other in texts if other != name and re.search(rf"\b{other}\b", text)}
        for name, text in texts.items()
    }
    order = TopologicalSorter(graph)
    order.prepare()
    done: list[str] = []
    while order.is_active():
        ready = sorted(order.get_ready())
        done.extend(ready)
        order.done(*ready)
    by_name = {p.stem: p for p in paths}
    return [by_name[n] for n in done]


def install_shipped(engine: Engine, *, refresh_existing: bool = False) -> list[str]:
    """Create the shipped dynamic tables this database lacks; return their names.

    Creating one refreshes it; `refresh_existing` also refreshes those already defined.
    """
    from warehouse.dynamic import catalog
    from warehouse.dynamic.refresh import refresh
    from warehouse.query.executor import execute

    cur = engine.cursor()
    try:
        existing = catalog.names(cur)
        created = []
        for path in in_creation_order(sorted(shipped_folder().glob("*.sql"))):
            if path.stem in existing:
                if refresh_existing:
                    refresh(cur, path.stem)
                continue
            execute(cur, definition(path)).read_all()
            created.append(path.stem)
            cur.execute(
                "INSERT INTO wanka.shipped_tables VALUES (?, now()) ON CONFLICT DO NOTHING",
                [path.stem],
            )
        return created
    finally:
        cur.close()


def ensure_shipped(engine: Engine) -> list[str]:
    """Create the shipped dynamic tables this warehouse was never given; return their names.

    Every command that writes calls this first: a new warehouse gets them all on its first
    command, an upgraded one those its wanka adds; one a person dropped is not made again.
    """
    cur = engine.cursor()
    try:
        given = {r[0] for r in cur.execute("SELECT name FROM wanka.shipped_tables").fetchall()}
        missing = [p for p in shipped_folder().glob("*.sql") if p.stem not in given]
        if not missing:
            return []
        from warehouse.dynamic import catalog
        from warehouse.query.executor import execute

        existing = catalog.names(cur)
        created = []
        for path in in_creation_order(sorted(missing)):
            if path.stem not in existing:
                execute(cur, definition(path)).read_all()
                created.append(path.stem)
            cur.execute(
                "INSERT INTO wanka.shipped_tables VALUES (?, now()) ON CONFLICT DO NOTHING",
                [path.stem],
            )
        return created
    finally:
        cur.close()
