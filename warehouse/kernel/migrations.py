"""The schema steps of `sql/schema/`: which a database file has, and applying those it lacks."""

from __future__ import annotations

import duckdb

from warehouse.ai import functions as ai_functions
from warehouse.errors import SchemaTooNew
from warehouse.kernel import blocks, catalog
from warehouse.kernel.transactions import transaction

_MIGRATIONS_DDL = """
CREATE SCHEMA IF NOT EXISTS wanka;
CREATE TABLE IF NOT EXISTS wanka.schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        VARCHAR NOT NULL,
    sha256      VARCHAR NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
"""


def applied_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version recorded in the file; 0 for a file wanka never touched."""
    exists = con.sql(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'wanka' AND table_name = 'schema_migrations'"
    ).fetchall()[0][0]
    if not exists:
        return 0
    return int(
        con.sql("SELECT coalesce(max(version), 0) FROM wanka.schema_migrations").fetchall()[0][0]
    )


def check_version(con: duckdb.DuckDBPyConnection) -> int:
    """Refuse a file written by a newer wanka; return its version."""
    found, known = applied_version(con), catalog.latest_version()
    if found > known:
        raise SchemaTooNew(
            f"this database has schema version {found} but this wanka knows only up to "
            f"{known}: upgrade wanka (pip install -U wanka) or open another --db"
        )
    return found


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply every schema step the file lacks, each in its own transaction; return them."""
    con.execute(_MIGRATIONS_DDL)
    check_version(con)
    blocks.register(con)  # gpu_metrics (0021) decodes the cold blocks with it
    ai_functions.ensure_bound(con)  # the AI macros (0024) call them
    # By the set of recorded steps, not the highest: a step filling a numbering gap is applied
    # to a file that already has the steps after it.
    done = {v for (v,) in con.sql("SELECT version FROM wanka.schema_migrations").fetchall()}
    applied: list[int] = []
    for step in catalog.migrations():
        if step.version in done:
            continue
        try:
            with transaction(con):
                con.execute(step.sql)
                con.execute(
                    "INSERT INTO wanka.schema_migrations (version, name, sha256) VALUES (?, ?, ?)",
                    [step.version, step.name, step.sha256],
                )
        except duckdb.Error as error:
            raise RuntimeError(f"schema step {step.path.name} failed: {error}") from error
        applied.append(step.version)
    return applied
