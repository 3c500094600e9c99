"""PostgreSQL catalog compatibility: what BI tools' introspection SQL needs from DuckDB.

Two halves: `rewrite` (sqlglot tree rules applied to every statement a pg client sends) and
`install` (views and macros created once per engine in the in-memory catalog's `pg_compat`
schema, never in the warehouse file).
"""

from __future__ import annotations

from service.pgwire.compat.objects import COMPAT_SCHEMA, install
from service.pgwire.compat.rewrites import rewrite

__all__ = ["COMPAT_SCHEMA", "install", "rewrite"]
