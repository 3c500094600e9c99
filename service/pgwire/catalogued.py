"""What a statement needs of the warehouse's catalog before it runs: names and result types.

Statements are parsed and rewritten once per text (`statements.classify`, cached). Two steps
depend on the session and the catalog instead, so they run per execution, on the connection's
thread: resolving unqualified names along a non-default search_path (`warehouse.query.search_path`),
and casting the outermost sum/avg/division to PostgreSQL's type (`compat.result_types`), which reads
the column types DuckDB reports (kept for a few seconds, and dropped after this session's DDL).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from sqlglot.schema import Schema

from service.pgwire.compat import paths, result_types
from service.pgwire.statements import Statement, classify
from warehouse.query import search_path

#: how long column types are trusted before the catalog is read again
TYPES_TTL_S = 10.0


class Catalogued:
    """One connection's catalog-dependent rewrites."""

    def __init__(self) -> None:
        self._columns: Schema | None = None
        self._read_at = 0.0

    @staticmethod
    def needed(statement: Statement, path: tuple[str, ...]) -> bool:
        """Whether `prepare` would change anything (cheap: no catalog read)."""
        if statement.tree is None:
            return False
        return path != search_path.DEFAULT or statement.typed

    def prepare(self, conn: Any, statement: Statement, path: tuple[str, ...]) -> Statement:
        """`statement` resolved and retyped for this session (blocking: reads the catalog).

        `conn` is the connection: its session's cursor, its markers' values (`context`).
        """
        conn.release_session()
        cur = conn.session.cursor
        if path != search_path.DEFAULT:
            known = search_path.relations(cur)
            conn.context.update(paths.context(path, known))
            statement = classify(statement.text, paths.resolver(path, known))
        if statement.tree is not None and statement.typed:
            tree = result_types.retyped(statement.tree, self._column_types(cur))
            # typed once: a prepared statement's Binds run what its Parse made
            statement = replace(statement, tree=tree or statement.tree, typed=False)
        return statement

    def forget(self) -> None:
        """The catalog may have changed (this session ran DDL)."""
        self._columns = None

    def _column_types(self, cur: Any) -> Schema:
        if self._columns is None or time.monotonic() - self._read_at > TYPES_TTL_S:
            self._columns = result_types.columns(cur)
            self._read_at = time.monotonic()
        return self._columns
