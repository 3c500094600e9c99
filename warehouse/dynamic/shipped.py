"""The dynamic tables wanka ships, one CREATE DYNAMIC TABLE per file in `sql/dynamic/`."""

from __future__ import annotations

import hashlib
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
    """Create the shipped dynamic tables this warehouse was never given, and create again those
    whose shipped file changed since (`upgrade`); return their names.

    Every command that writes calls this first: a new warehouse gets them all on its first
    command, an upgraded one those its wanka adds or changed; one a person dropped is not made
    again.
    """
    cur = engine.cursor()
    try:
        given = dict(cur.execute("SELECT name, source_md5 FROM wanka.shipped_tables").fetchall())
        files = {p.stem: p for p in shipped_folder().glob("*.sql")}
        missing = [p for name, p in files.items() if name not in given]
        changed = [n for n, p in files.items() if n in given and given[n] != source_md5(p)]
        made = upgrade(cur, files, changed, given) if changed else []
        if missing:
            made += _install(cur, missing, refresh_existing=False, mark_existing=True)
        return made
    finally:
        cur.close()


def source_md5(path: Path) -> str:
    """The version of a shipped file: the md5 of its text, includes expanded."""
    return hashlib.md5(definition(path).encode()).hexdigest()


def upgrade(
    cur: duckdb.DuckDBPyConnection,
    files: dict[str, Path],
    changed: list[str],
    given: dict[str, str | None],
) -> list[str]:
    """Create again the shipped tables of `changed` (their files differ from what the warehouse
    was given) and the shipped tables that read them, in one transaction each way: dropped
    readers first, created in creation order. A table given before versions were recorded
    (`given` None) is replaced only when its columns differ from its file's; one a person
    dropped, or read by a dynamic table wanka does not ship, is left as it is. The names made."""
    from warehouse.dynamic import catalog

    existing = set(catalog.names(cur))
    stale = {
        n
        for n in changed
        if n in existing and (given[n] is not None or _columns_differ(cur, files[n]))
    }
    for name in set(changed) - stale:  # dropped by a person, or the same columns: as it is
        _record(cur, name, files[name])
    todo, stack = set(stale), list(stale)
    while stack:  # what reads a replaced table is made again after it
        for reader in catalog.consumers(cur, stack.pop()):
            if reader not in todo:
                todo.add(reader)
                stack.append(reader)
    if not todo or any(name not in files for name in todo):
        return []  # nothing to do, or a table of a person's reads it: theirs to recreate
    order = in_creation_order([files[n] for n in todo])
    for path in reversed(order):
        _drop(cur, path.stem)
    for path in order:
        _create(cur, path)
        _record(cur, path.stem, path)
    return [p.stem for p in order]


def _columns_differ(cur: duckdb.DuckDBPyConnection, path: Path) -> bool:
    from warehouse.parsing.script import parse
    from warehouse.promql import sql_function

    [statement] = parse(cur, definition(path)).statements
    tree = statement.dynamic.tree if statement.dynamic is not None else None
    if tree is None or tree.expression is None:
        return True
    try:
        query = sql_function.expand(cur, tree.expression.sql("duckdb"))
        shipped = [c[0] for c in cur.execute(f"SELECT * FROM ({query}) LIMIT 0").description]
    except duckdb.Error:  # the new query needs what the tables it reads gain in this upgrade
        return True
    held = [c[0] for c in cur.execute(f"SELECT * FROM {path.stem} LIMIT 0").description]
    return shipped != held


def _drop(cur: duckdb.DuckDBPyConnection, name: str) -> None:
    from warehouse.dynamic import statements
    from warehouse.parsing.script import parse

    [statement] = parse(cur, f"DROP DYNAMIC TABLE {name}").statements
    if statement.dynamic is not None:
        statements.run(cur, statement.dynamic)


def _record(cur: duckdb.DuckDBPyConnection, name: str, path: Path) -> None:
    cur.execute(
        "INSERT INTO wanka.shipped_tables VALUES (?, now(), ?) "
        "ON CONFLICT DO UPDATE SET source_md5 = excluded.source_md5",
        [name, source_md5(path)],
    )


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
            "INSERT INTO wanka.shipped_tables VALUES (?, now(), ?) ON CONFLICT DO NOTHING",
            [path.stem, source_md5(path)],
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
