"""The secret tables kept out of DuckDB's own catalog functions on every session's cursor.

`policy` refuses SQL that reads `wanka.users` or `wanka.tokens`; their names and columns
(`salt`, `stored_key`, ...) should not show through the catalog either. The PostgreSQL
endpoint's catalog views filter them out themselves; DuckDB's catalog functions and the
`information_schema` and `SHOW` statements built on them are covered here: a session's cursor
gets TEMP table macros of the same names (DuckDB looks a name up in `temp` before its system
catalog, also inside its own information_schema views), each the system function less the
secret tables' rows. The system functions stay reachable to wanka's own code on other cursors.
"""

from __future__ import annotations

import duckdb

from warehouse.security.policy import SECRET_TABLES

#: DuckDB's catalog table functions that list tables or their columns, constraints, indexes
HIDING = ("duckdb_tables", "duckdb_columns", "duckdb_constraints", "duckdb_indexes")


def _visible() -> str:
    pairs = ", ".join(f"('{schema}', '{table}')" for schema, table in sorted(SECRET_TABLES))
    return f"(schema_name, table_name) NOT IN ({pairs})"


def install(cur: duckdb.DuckDBPyConnection) -> None:
    """Shadow the catalog functions of `HIDING` on this cursor (idempotent)."""
    visible = _visible()
    for name in HIDING:
        cur.execute(
            f"CREATE OR REPLACE TEMP MACRO {name}() AS TABLE "
            f"SELECT * FROM system.main.{name}() WHERE {visible}"
        )
    named = ", ".join(
        f"'{catalog}{schema}.{table}'"
        for schema, table in sorted(SECRET_TABLES)
        for catalog in ("", "warehouse.")
    )
    cur.execute(  # pragma_table_info('wanka.users') would list their columns
        "CREATE OR REPLACE TEMP MACRO pragma_table_info(name) AS TABLE "
        "SELECT * FROM system.main.pragma_table_info(name) "
        f"WHERE lower(replace(name, '\"', '')) NOT IN ({named})"
    )
