"""Change tracking on a dynamic table that another dynamic table reads (a chain).

A dynamic table's rows carry no batch ids: its refresh deletes and inserts rows. Once another
dynamic table reads it, statement triggers on it log those rows the way 0005/0007 log the
updates and deletes of base tables: a count per statement in wanka.table_changes (kinds 'insert'
and 'delete') and the rows themselves in wanka."changes_<name>" ('inserted' / 'deleted'), with
a sequence number from wanka.batch_seq. The reader's refresh recomputes the groups those rows
belong to (warehouse.dynamic.plan.joins) and trims the log it has seen. Rows are copied only
while some dynamic table reads the table, as for base tables.
"""

from __future__ import annotations

import duckdb
from sqlglot import exp

from warehouse.dynamic.plan.joins import changes_table


def _ident(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("duckdb")


def _literal(text: str) -> str:
    return exp.Literal.string(text).sql("duckdb")


def track(cur: duckdb.DuckDBPyConnection, name: str) -> None:
    """Log the rows refreshes of dynamic table `name` insert and delete (idempotent)."""
    log = changes_table(name).sql("duckdb")
    visible = f"main.{_ident(name)}"
    exists = cur.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'wanka' AND table_name = ?",
        [f"changes_{name}"],
    ).fetchall()[0][0]
    if exists:
        return
    read = (
        "EXISTS (SELECT 1 FROM wanka.dynamic_tables "
        f"WHERE list_contains(sources, {_literal(name)}))"
    )
    cur.execute(
        f"CREATE TABLE {log} AS SELECT *, CAST(0 AS BIGINT) AS seq, CAST('' AS VARCHAR) AS kind "
        f"FROM {visible} LIMIT 0"
    )
    for event, transition, kind, logged in (
        ("INSERT", "NEW", "insert", "inserted"),
        ("DELETE", "OLD", "delete", "deleted"),
    ):
        # creation order is firing order: the count takes the seq, the rows reuse it (currval)
        cur.execute(
            f"CREATE TRIGGER {_ident(f'{name}_changes_{kind}')} AFTER {event} ON {visible} "
            f"REFERENCING {transition} TABLE AS t FOR EACH STATEMENT "
            f"INSERT INTO wanka.table_changes SELECT {_literal(name)}, "
            f"nextval('wanka.batch_seq'), {_literal(kind)}, count(*), now() FROM t "
            f"HAVING count(*) > 0 AND {read}"
        )
        cur.execute(
            f"CREATE TRIGGER {_ident(f'{name}_rows_{kind}')} AFTER {event} ON {visible} "
            f"REFERENCING {transition} TABLE AS t FOR EACH STATEMENT "
            f"INSERT INTO {log} SELECT *, currval('wanka.batch_seq'), {_literal(logged)} "
            f"FROM t WHERE {read}"
        )


def untrack(cur: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop the log of `name` (its triggers go with its table, or stay harmless until then)."""
    cur.execute(f"DROP TABLE IF EXISTS {changes_table(name).sql('duckdb')}")
