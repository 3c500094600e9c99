"""The compatibility objects: macros installed in memory, catalog views inlined as subqueries."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from service.pgwire.settings import DEFAULTS

COMPAT_SCHEMA = "pg_compat"
HERE = Path(__file__).parent
_VIEW_HEADER = re.compile(r"^-- view: (?P<name>[\w.]+)\s*$", re.M)
_MACRO_NAME = re.compile(r"CREATE OR REPLACE MACRO memory\.pg_compat\.(\w+)\(", re.I)


def install(cur: Any) -> None:
    """Create schema memory.pg_compat and its macros (idempotent) on a privileged cursor."""
    cur.execute(f"CREATE SCHEMA IF NOT EXISTS memory.{COMPAT_SCHEMA}")
    for statement in cur.extract_statements((HERE / "macros.sql").read_text()):
        cur.execute(statement.query)
    settings = f"(SELECT setting FROM (VALUES {_settings_values()}) AS s(name, setting)"
    cur.execute(
        f"CREATE OR REPLACE MACRO memory.{COMPAT_SCHEMA}.current_setting(wanted) AS "
        f"{settings} WHERE lower(name) = lower(wanted)), "
        f"(wanted, missing_ok) AS {settings} WHERE lower(name) = lower(wanted))"
    )
    _list_catalog_views(cur)


#: the memory schemas whose views stand for pg_catalog's and information_schema's relations
LISTED = {"pg_catalog": f"{COMPAT_SCHEMA}_pg_catalog", "information_schema": f"{COMPAT_SCHEMA}_is"}
#: catalog relations that are not relations in PostgreSQL
_NOT_RELATIONS = frozenset({"pg_get_keywords"})


def _list_catalog_views(cur: Any) -> None:
    """The catalog views as views in memory schemas, so that pg_class, pg_attribute and
    information_schema list them with their columns as PostgreSQL lists its own (Superset's
    and DBeaver's browsers of information_schema and pg_catalog). Queries never read them:
    the rewrite inlines the views (`view`)."""
    for namespace in LISTED.values():
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS memory.{namespace}")
    for key, tree in views().items():
        schema, _, name = key.rpartition(".")
        if name in _NOT_RELATIONS:
            continue
        target = f"memory.{LISTED[schema or 'pg_catalog']}.{name}"
        cur.execute(f"CREATE OR REPLACE VIEW {target} AS {tree.sql(dialect='duckdb')}")


@functools.cache
def macro_names() -> frozenset[str]:
    """Every function name the macros define (lower case)."""
    text = (HERE / "macros.sql").read_text()
    return frozenset({m.lower() for m in _MACRO_NAME.findall(text)} | {"current_setting"})


def _settings_values() -> str:
    rows = [
        "(" + ", ".join("'" + v.replace("'", "''") + "'" for v in (name, value)) + ")"
        for name, value in sorted(DEFAULTS.items())
    ]
    return ", ".join(rows)


@functools.cache
def views() -> dict[str, exp.Query]:
    """Catalog views by name ('pg_class', 'information_schema.tables'), parsed once."""
    text = (HERE / "views.sql").read_text().replace("{settings}", _settings_values())
    heads = list(_VIEW_HEADER.finditer(text))
    found: dict[str, exp.Query] = {}
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : following.start() if following else len(text)]
        body = "\n".join(line for line in body.splitlines() if not line.startswith("--"))
        tree = sqlglot.parse_one(body, read="duckdb")
        assert isinstance(tree, exp.Query), head["name"]
        found[head["name"].lower()] = tree
    return found


_DECLARED = re.compile(r'^-- (?P<type>name|"char"|varchar): (?P<columns>[\w ]+)$', re.M)
_DECLARED_OID = {"name": 19, '"char"': 18, "varchar": 1043}


@functools.cache
def declared_columns() -> dict[str, dict[str, int]]:
    """Catalog columns of a type DuckDB lacks, by relation: {'pg_class': {'relname': 19}}.

    views.sql states them under a view's header: `-- name: relname`, `-- "char": relkind` or
    `-- varchar: data_type` (information_schema's character_data and yes_or_no).
    """
    text = (HERE / "views.sql").read_text()
    heads = list(_VIEW_HEADER.finditer(text))
    found: dict[str, dict[str, int]] = {}
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : following.start() if following else len(text)]
        columns = found.setdefault(head["name"].lower(), {})
        for line in _DECLARED.finditer(body):
            oid = _DECLARED_OID[line["type"]]
            columns.update({column: oid for column in line["columns"].split()})
    return found


def view(schema: str, name: str) -> exp.Query | None:
    """The query standing for `schema.name`, if wanka provides one."""
    key = name.lower() if schema in ("", "pg_catalog") else f"{schema}.{name}".lower()
    tree = views().get(key)
    return tree.copy() if tree is not None else None
