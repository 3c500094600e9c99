"""The session's search_path on the wire: what resolves names and what current_schema() says.

`warehouse.query.search_path` does the resolving; here are the names the wire endpoint provides
itself (its `pg_catalog` and `information_schema` views, searched first as PostgreSQL searches
`pg_catalog` first) and the values of the session markers the compatibility rules leave for
`current_schema()` and `current_schemas()`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping

from sqlglot import exp

from service.pgwire.compat.objects import views
from service.pgwire.compat.rewrites import CURRENT_SCHEMA, SEARCH_PATH
from warehouse.query import search_path


@functools.cache
def provided() -> dict[str, frozenset[str]]:
    """Relation names of the catalog views by schema (`pg_catalog`, `information_schema`)."""
    found: dict[str, set[str]] = {"pg_catalog": set(), "information_schema": set()}
    for key in views():
        schema, _, name = key.rpartition(".")
        found[schema or "pg_catalog"].add(name)
    return {schema: frozenset(names) for schema, names in found.items()}


def resolver(
    path: Iterable[str], known: Mapping[str, frozenset[str]]
) -> Callable[[exp.Expr], exp.Expr]:
    """Qualify a parsed statement's relations along `path` (`pg_catalog` first unless named)."""
    order = list(path)
    if "pg_catalog" not in order:
        order.insert(0, "pg_catalog")
    holds = search_path.holder(known, provided())
    return lambda tree: search_path.qualify(tree, order, holds)


def context(path: Iterable[str], known: Mapping[str, frozenset[str]]) -> dict[str, exp.Expr]:
    """Marker values: `current_schema()` and the path's existing schemas."""
    existing = [
        s for s in path if s != "$user" and search_path.current_schema([s], known) is not None
    ]
    return {
        CURRENT_SCHEMA: exp.Literal.string(existing[0]) if existing else exp.null(),
        SEARCH_PATH: exp.Array(expressions=[exp.Literal.string(s) for s in existing])
        if existing
        else exp.cast(exp.Array(expressions=[]), "VARCHAR[]"),
    }


DEFAULT_CONTEXT = context(search_path.DEFAULT, {})
