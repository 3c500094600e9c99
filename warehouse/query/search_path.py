"""A session's search_path: unqualified relation names resolved as PostgreSQL resolves them.

PostgreSQL looks an unqualified table or view name up in `pg_catalog`, then in each schema of
`search_path` in turn, and takes the first that holds it. wanka does the same by writing the
schema into the statement before it runs, so what the role policy checks is what DuckDB reads:
`SET search_path = wanka` then `SELECT * FROM users` becomes `wanka.users`, which the policy
refuses exactly as if it had been written out. A name no schema holds stays as written (DuckDB
then reports it missing), and so does a name a WITH clause defines.

Schema `public` is the warehouse's `main`. `"$user"` stands for a schema named as the session's
user, which wanka never creates, so it is skipped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

DEFAULT = ("$user", "public")

#: schema name as a client writes it -> schema in DuckDB
_DUCKDB_SCHEMA = {"public": "main"}


@functools.lru_cache(maxsize=256)
def parse_path(value: str) -> tuple[str, ...]:
    """The schemas of a search_path setting, in order (unquoted names folded to lower case).

    >>> parse_path('"$user", public')
    ('$user', 'public')
    >>> parse_path("Wanka,  \\"Mixed\\"")
    ('wanka', 'Mixed')
    >>> parse_path("''")
    ()
    """
    names: list[str] = []
    for part in _split_commas(value):
        part = part.strip()
        if len(part) >= 2 and part[0] == part[-1] == '"':
            names.append(part[1:-1].replace('""', '"'))
        elif len(part) >= 2 and part[0] == part[-1] == "'":
            names.extend(parse_path(part[1:-1].replace("''", "'")))
        elif part:
            names.append(part.lower())
    return tuple(names)


def show(path: Iterable[str]) -> str:
    """A path as PostgreSQL's `SHOW search_path` prints it (quoted only where needed).

    >>> show(("$user", "public"))
    '"$user", public'
    >>> show(("Mixed", "wanka"))
    '"Mixed", wanka'
    >>> show(())
    '""'
    """
    shown = [n if _PLAIN.fullmatch(n) else '"' + n.replace('"', '""') + '"' for n in path]
    return ", ".join(shown) or '""'


_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")


def _split_commas(value: str) -> list[str]:
    parts, current, quote = [], "", ""
    for char in value:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == ",":
            parts.append(current)
            current = ""
            continue
        current += char
    parts.append(current)
    return parts


def duckdb_schema(schema: str) -> str:
    """The DuckDB schema a client's schema name stands for (`public` is `main`)."""
    return _DUCKDB_SCHEMA.get(schema.lower(), schema)


def relations(cur: Any) -> dict[str, frozenset[str]]:
    """Table and view names (lower case) by DuckDB schema in the session's database."""
    rows = cur.execute(
        "SELECT schema_name, lower(table_name) FROM duckdb_tables() "
        "WHERE database_name = current_database() "
        "UNION ALL SELECT schema_name, lower(view_name) FROM duckdb_views() "
        "WHERE database_name = current_database() AND NOT internal"
    ).fetchall()
    found: dict[str, set[str]] = {}
    for schema, name in rows:
        found.setdefault(schema, set()).add(name)
    return {schema: frozenset(names) for schema, names in found.items()}


def current_schema(path: Iterable[str], known: Mapping[str, frozenset[str]]) -> str | None:
    """The first schema of `path` that exists (what `current_schema()` answers), else None."""
    for schema in path:
        if schema != "$user" and (duckdb_schema(schema) in known or schema in _ALWAYS):
            return schema
    return None


#: schemas that exist whatever the warehouse holds
_ALWAYS = frozenset({"public", "pg_catalog", "information_schema"})


def qualify(tree: exp.Expr, path: Iterable[str], holds: Callable[[str, str], bool]) -> exp.Expr:
    """Write the schema of each unqualified relation of `tree` (in place), first match wins.

    `holds(schema, name)` says whether a schema of the path (as the client names it) holds
    the relation. Names defined by a WITH clause anywhere in the statement are left alone.
    """
    _qualify(tree, path, holds)
    return tree


def _qualify(tree: exp.Expr, path: Iterable[str], holds: Callable[[str, str], bool]) -> int:
    """`qualify`, saying how many names it qualified."""
    done = 0
    schemas = [s for s in path if s != "$user"]
    if not schemas:
        return done
    local = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in list(tree.find_all(exp.Table)):
        if table.args.get("db") is not None or not isinstance(table.this, exp.Identifier):
            continue
        name = table.name if table.this.quoted else table.name.lower()
        if name.lower() in local:
            continue
        for schema in schemas:
            if holds(schema, name):
                written = duckdb_schema(schema)
                table.set("db", exp.to_identifier(written, quoted=written != written.lower()))
                done += 1
                break
    return done


def holder(
    known: Mapping[str, frozenset[str]], extra: Mapping[str, frozenset[str]] | None = None
) -> Callable[[str, str], bool]:
    """`holds(schema, name)` over `relations()` plus names a face provides itself."""
    extra = extra or {}

    def holds(schema: str, name: str) -> bool:
        lowered = name.lower()
        return lowered in known.get(duckdb_schema(schema), ()) or lowered in extra.get(
            schema.lower(), ()
        )

    return holds


def qualify_sql(sql: str, path: Iterable[str], known: Mapping[str, frozenset[str]]) -> str:
    """DuckDB SQL with its unqualified relations resolved along `path` (HTTP's `schema`).

    Text sqlglot cannot read, more than one statement, or one with nothing to qualify is
    returned unchanged: its names then resolve in `main` as always.
    """
    try:
        statements = sqlglot.parse(sql, read="duckdb")
    except SqlglotError:
        return sql
    if len(statements) != 1 or statements[0] is None or isinstance(statements[0], exp.Command):
        return sql
    tree = statements[0]
    return tree.sql(dialect="duckdb") if _qualify(tree, path, holder(known)) else sql
