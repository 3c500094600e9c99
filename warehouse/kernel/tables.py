"""The one table registry: what wanka does with each table, read from the schema in `sql/`.

Every table that wanka treats specially carries one line above its CREATE TABLE in the schema
step that creates it, e.g. `-- table nodes: tracked; key (host); demo; lake` (the roles are
explained in sql/schema/0001_base_tables.sql). Change tracking, ingest's replace keys, the
reference tables, the demo and the lake export all read these sets; nothing else lists tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from warehouse.kernel import catalog

_HEADER = re.compile(r"^-- table (?P<name>\w+): (?P<roles>.+)$")
_CREATE = re.compile(r"^CREATE (TABLE|VIEW) (?P<name>\w+)\b", re.I)
_KEY = re.compile(r"^key \((?P<columns>[\w, ]+)\)$")
ROLES = ("tracked", "reference", "demo", "lake", "view")


@dataclass(frozen=True)
class Table:
    """One declared table and its roles."""

    name: str
    tracked: bool = False
    reference: bool = False
    demo: bool = False
    lake: bool = False
    view: bool = False  # a view over wanka's own tables, read only
    key: tuple[str, ...] = ()  # ingest replaces rows with the same key


def parse_roles(name: str, text: str, where: str) -> Table:
    """A `-- table NAME: roles` line's roles.

    >>> found = parse_roles("jobs", "tracked; key (job_id, step); lake", "x.sql:1")
    >>> found.tracked, found.lake, found.view, found.key
    (True, True, False, ('job_id', 'step'))
    """
    flags: dict[str, bool] = {}
    key: tuple[str, ...] = ()
    for part in (p.strip() for p in text.split(";")):
        found = _KEY.match(part)
        if found:
            key = tuple(c.strip() for c in found["columns"].split(","))
        elif part in ROLES:
            flags[part] = True
        else:
            expected = ", ".join(ROLES)
            raise ValueError(
                f"{where}: unknown table role {part!r} (expected {expected}, key (...))"
            )
    return Table(name, key=key, **flags)


@cache
def declared() -> tuple[Table, ...]:
    """Every declared table, in the order the schema creates them."""
    return declared_in(catalog.migrations())


def declared_in(steps: tuple[catalog.Migration, ...]) -> tuple[Table, ...]:
    """The tables `steps` declare; a header not right above its CREATE TABLE is an error."""
    found: list[Table] = []
    for step in steps:
        pending: tuple[Table, int] | None = None
        for number, line in enumerate(step.sql.splitlines(), 1):
            header = _HEADER.match(line)
            if header:
                where = f"{step.path.name}:{number}"
                pending = (parse_roles(header["name"], header["roles"], where), number)
                continue
            if pending is not None and line.strip():
                create = _CREATE.match(line)
                if not create or create["name"] != pending[0].name:
                    raise ValueError(
                        f"{step.path.name}:{pending[1]}: `-- table {pending[0].name}:` must "
                        "stand right above that table's CREATE TABLE"
                    )
                found.append(pending[0])
                pending = None
    return tuple(found)


def _names(role: str) -> tuple[str, ...]:
    return tuple(t.name for t in declared() if getattr(t, role))


#: Base tables whose inserts carry batch ids and whose updates/deletes are logged.
TRACKED = frozenset(_names("tracked"))
#: Reference tables: they change only when wanka reloads them (then readers refresh fully).
REFERENCE = frozenset(_names("reference"))
#: Tables that hold one row per thing, and the columns that say which thing.
REPLACE_KEYS = {t.name: t.key for t in declared() if t.key}
#: Tables the demo owns: a rebuild empties exactly these before loading.
DEMO = _names("demo")
#: Tables `wanka export --lake` writes.
LAKE = _names("lake")
