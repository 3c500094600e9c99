"""The dynamic tables wanka ships, one CREATE DYNAMIC TABLE per file in `sql/dynamic/`."""

from __future__ import annotations

from pathlib import Path

from warehouse import catalog as sql_catalog
from warehouse.dynamic import catalog
from warehouse.dynamic.refresh import refresh
from warehouse.engine import Engine
from warehouse.query import execute


def shipped_folder() -> Path:
    """`sql/dynamic/` beside the schema steps (in a checkout or an installed wheel)."""
    return sql_catalog.migrations()[0].path.parent.parent / "dynamic"


def install_shipped(engine: Engine, *, refresh_existing: bool = False) -> list[str]:
    """Create the shipped dynamic tables this database lacks; return their names.

    Creating one refreshes it; `refresh_existing` also refreshes those already defined.
    """
    cur = engine.cursor()
    try:
        existing = catalog.names(cur)
        created = []
        for path in sorted(shipped_folder().glob("*.sql")):
            if path.stem in existing:
                if refresh_existing:
                    refresh(cur, path.stem)
                continue
            execute(cur, path.read_text()).read_all()
            created.append(path.stem)
        return created
    finally:
        cur.close()
