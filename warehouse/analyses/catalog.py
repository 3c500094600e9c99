"""The shipped analyses: `sql/analyses/NAME.sql`, each a header comment and one query.

The header is the analysis's documentation and its interface:

    -- queue_wait: Queue wait by job size and team.            <- name and one-line description
    --
    -- Free text: what it answers, how, caveats.
    --
    -- Parameters:
    --   $cluster  VARCHAR = ''   only this cluster ('' for all)
    -- Columns:
    --   team      the account that submitted the jobs
    --   p50_wait_s  median queue wait, s
    SELECT ...

Parameters are DuckDB named parameters (`$cluster`); the defaults declared here are used unless
the caller gives a value. Python parses the header, checks the caller's values against the
declared types and binds them; it never edits the SQL text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from warehouse.analyses.params import Param, parse_param_line
from warehouse.errors import UserError
from warehouse.kernel.catalog import expand_includes, sql_dir

_TITLE = re.compile(r"^-- ([a-z][a-z0-9_]*): (.+)$")
_COLUMN = re.compile(r"^--\s{2,}([a-z_][a-z0-9_]*)\s+(.+)$")


@dataclass(frozen=True)
class Column:
    """A result column the header documents, with its unit in the description."""

    name: str
    description: str


@dataclass(frozen=True)
class Analysis:
    """One named, documented query."""

    name: str
    title: str  # the one-line description
    about: str  # the free text under the title
    params: tuple[Param, ...]
    columns: tuple[Column, ...]
    sql: str  # the whole file: comments and query
    path: Path

    def param(self, name: str) -> Param:
        """The declared parameter `name`, or a UserError listing the ones there are."""
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise UserError(f"analysis {self.name} has no parameter {name!r} (parameters: {known})")


def analyses_folder() -> Path:
    """`sql/analyses/`."""
    return sql_dir() / "analyses"


def parse_analysis(path: Path) -> Analysis:
    """Read one analysis file; a header that does not follow the format is an error naming the
    file and line."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    match = _TITLE.match(lines[0]) if lines else None
    if not match or match[1] != path.stem:
        raise ValueError(f"{path}:1: expected '-- {path.stem}: <one-line description>'")
    about: list[str] = []
    params: list[Param] = []
    columns: list[Column] = []
    section = "about"
    for number, line in enumerate(lines[1:], start=2):
        if not line.startswith("--"):
            break
        body = line[2:].strip()
        if body in ("Parameters:", "Columns:"):
            section = body[:-1].lower()
        elif section == "about":
            about.append(body)
        elif section == "parameters" and body:
            params.append(parse_param_line(line, f"{path}:{number}"))
        elif section == "columns" and body:
            found = _COLUMN.match(line)
            if not found:
                raise ValueError(f"{path}:{number}: expected '--   column_name  description'")
            columns.append(Column(found[1], found[2].strip()))
    if not columns:
        raise ValueError(f"{path}: the header documents no Columns:")
    return Analysis(
        name=match[1],
        title=match[2].strip(),
        about="\n".join(about).strip(),
        params=tuple(params),
        columns=tuple(columns),
        sql=expand_includes(text, path.parent),
        path=path,
    )


@cache
def _load(folder: Path) -> dict[str, Analysis]:
    return {p.stem: parse_analysis(p) for p in sorted(folder.glob("*.sql"))}


def all_analyses(folder: Path | None = None) -> dict[str, Analysis]:
    """Every shipped analysis by name, in name order."""
    return _load(folder or analyses_folder())


def analysis_named(name: str, folder: Path | None = None) -> Analysis:
    """The analysis `name`, or a UserError listing the ones there are."""
    found = all_analyses(folder)
    if name not in found:
        raise UserError(
            f"no analysis named {name!r} (see 'wanka analyze --list'; there are {', '.join(found)})"
        )
    return found[name]
