"""Tree rewrites from PostgreSQL client SQL to DuckDB (placeholder; rules follow)."""

from __future__ import annotations

from sqlglot import exp


def rewrite(tree: exp.Expr) -> exp.Expr:
    return tree
