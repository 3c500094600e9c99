"""The dynamic tables wanka ships, one CREATE DYNAMIC TABLE per file in `sql/dynamic/`."""

from __future__ import annotations

import re
from graphlib import TopologicalSorter
from pathlib import Path

import duckdb

from warehouse.errors import WankaError, sql_error
from warehouse.kernel import catalog as sql_catalog
from warehouse.kernel.engine import Engine

# The dynamic-table machinery (sqlglot, the parser, the planner) is imported where a table is
# created or refreshed: every writing command checks for missing shipped tables, and most find none.


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
    cur = engine.cursor()
    try:
        paths = list(shipped_folder().glob("*.sql"))
        return _install(cur, paths, refresh_existing=refresh_existing, mark_existing=False)
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
        return _install(cur, missing, refresh_existing=False, mark_existing=True)
    finally:
        cur.close()


def _install(
    cur: duckdb.DuckDBPyConnection,
    paths: list[Path],
    *,
    refresh_existing: bool,
    mark_existing: bool,
) -> list[str]:
    """Create those of `paths` no dynamic table is named after, in creation order, and mark
    each as given; one already defined is refreshed with `refresh_existing` and marked given
    with `mark_existing`. The names created."""
    from warehouse.dynamic import catalog
    from warehouse.dynamic.refresh import refresh

    existing = catalog.names(cur)
    created = []
    for path in in_creation_order(sorted(paths)):
        if path.stem in existing:
            if refresh_existing:
                refresh(cur, path.stem)
            if not mark_existing:
                continue
        else:
            _create(cur, path)
            created.append(path.stem)
        cur.execute(
            "INSERT INTO wanka.shipped_tables VALUES (?, now()) ON CONFLICT DO NOTHING",
            [path.stem],
        )
    return created


def _create(cur: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Run a shipped file's CREATE DYNAMIC TABLE: parsed as any text is, then run by the
    dynamic-table statements (what the query path would hand it to)."""
    from warehouse.dynamic import statements
    from warehouse.parsing.script import parse

    for statement in parse(cur, definition(path)).statements:
        if statement.dynamic is None:
            raise WankaError(f"{path.name}: a shipped file holds CREATE DYNAMIC TABLE only")
        try:
            statements.run(cur, statement.dynamic)
        except duckdb.Error as error:
            raise sql_error(error) from None
