"""The `sql/` folder as typed definitions: schema migrations and reference tables.

`sql/` is data, not code. A schema migration is `sql/schema/NNNN_name.sql`; its number is the
schema version it brings the database to. A reference table is `sql/reference/<table>.csv`,
whose header names columns of the table's DDL.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@cache
def sql_dir() -> Path:
    """Where `sql/` is: inside the installed package, or at the top of a source checkout."""
    here = Path(__file__).resolve().parents[1]  # warehouse/, beside kernel/
    for candidate in (here / "_sql", here.parent / "sql"):
        if (candidate / "schema").is_dir():
            return candidate
    raise FileNotFoundError(
        f"wanka's sql/ folder is missing (looked in {here / '_sql'} and "
        f"{here.parent / 'sql'}); reinstall wanka"
    )


@dataclass(frozen=True)
class Migration:
    """One schema step: `sql/schema/0003_system.sql` is version 3."""

    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        """The step's statements, its `@include(...)` parts in (sql/schema/parts/)."""
        return expand_includes(self.path.read_text(encoding="utf-8"), self.path.parent)

    @property
    def sha256(self) -> str:
        """The hash of the statements the step runs, not of the file that writes them: a step
        rewritten to include a part it had spelled out keeps its hash only if it runs the same
        text, which tests/warehouse/test_catalog.py holds every shipped step to."""
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ReferenceTable:
    """A table whose rows are published specs shipped as `sql/reference/<table>.csv`."""

    table: str
    path: Path

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


_INCLUDE = re.compile(r"@include\(([\w./-]+\.sql)((?:,\s*\w+=\w+)*)\)")
_ARGUMENT = re.compile(r"(\w+)=(\w+)")
_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def expand_includes(text: str, folder: Path) -> str:
    """`text` with each `@include(path.sql)` (relative to `folder`) replaced by that file's SQL,
    its whole-line comments left out, its own includes expanded (relative to its folder).

    A long query can so be kept in parts a person reads one at a time (sql/health/), and a
    block repeated for several tables written once: `@include(part.sql, table=jobs)` puts
    `jobs` for each `${table}` in the part (a name, never an expression).

    Raises:
        ValueError: for a part's `${name}` the include does not give, or an argument the part
            never uses.
    """

    def part(match: re.Match[str]) -> str:
        path = (folder / match[1]).resolve()
        body = path.read_text(encoding="utf-8")
        lines = [line for line in body.splitlines() if not line.lstrip().startswith("--")]
        sql = "\n".join(lines).strip().rstrip(";")
        given = dict(_ARGUMENT.findall(match[2]))
        used = set(_PLACEHOLDER.findall(sql))
        if used != set(given):
            raise ValueError(
                f"{match[0]}: {path.name} takes {sorted(used) or 'no arguments'}, "
                f"not {sorted(given) or 'none'}"
            )
        sql = _PLACEHOLDER.sub(lambda name: given[name[1]], sql)
        return expand_includes(sql, path.parent)

    return _INCLUDE.sub(part, text)


def migrations(folder: Path | None = None) -> tuple[Migration, ...]:
    """All schema migrations in version order; numbers grow, gaps are allowed.

    A gap is a step another branch has claimed and not yet merged: when it arrives, databases
    that already have the later steps gain it on open (see `migrations.migrate`).

    >>> [m.version for m in migrations()][:3]
    [1, 2, 3]
    """
    folder = folder or sql_dir() / "schema"
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise ValueError(f"{path}: schema files are named NNNN_name.sql")
        found.append(Migration(int(match[1]), match[2], path))
    for before, migration in itertools.pairwise(found):
        if migration.version == before.version:
            raise ValueError(f"{migration.path}: schema version {before.version} given twice")
    return tuple(found)


def latest_version() -> int:
    """The schema version this wanka writes."""
    found = migrations()
    return found[-1].version if found else 0


def reference_tables(folder: Path | None = None) -> tuple[ReferenceTable, ...]:
    """Reference CSVs, one per table, in name order."""
    folder = folder or sql_dir() / "reference"
    return tuple(ReferenceTable(p.stem, p) for p in sorted(folder.glob("*.csv")))
