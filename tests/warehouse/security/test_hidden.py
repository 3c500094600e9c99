"""No catalog a session can query shows wanka.users or wanka.tokens (their names or columns)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.serve.server import Limits, Server
from tests.warehouses import Warehouses
from warehouse.security.policy import Refused
from warehouse.security.users import User, add_user

#: every way DuckDB's SQL lists tables and columns, each as a query of rows to search
CATALOGS = [
    "SELECT * FROM duckdb_tables()",
    "SELECT * FROM duckdb_columns()",
    "SELECT * FROM duckdb_constraints()",
    "SELECT * FROM duckdb_indexes()",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM information_schema.columns",
    "SELECT * FROM information_schema.table_constraints",
    "SELECT * FROM information_schema.key_column_usage",
    "SELECT * FROM pg_catalog.pg_class",
    "SELECT * FROM pg_catalog.pg_attribute",
    "SHOW ALL TABLES",
    "SELECT * FROM pragma_table_info('wanka.users')",
    'SELECT * FROM pragma_table_info(\'"wanka"."tokens"\')',
    "SELECT * FROM pragma_table_info('warehouse.wanka.users')",
]
#: what would give the secret tables away in a row's text
SECRETS = ("'users'", "'tokens'", "wanka.users", "stored_key", "server_key", "token_sha256")


@pytest.fixture(scope="module")
def server(warehouses: Warehouses) -> Iterator[Server]:
    limits = Limits(timeout_s=30)
    with (
        warehouses.scratch() as folder,  # in memory, as the :memory: this stands in for
        Server(str(warehouses.empty(folder / "w.duckdb", shipped=True)), limits=limits) as served,
    ):
        cur = served.engine.cursor()
        add_user(cur, "reader", "reader", "pw")
        add_user(cur, "admin", "admin", "pw")
        cur.close()
        yield served


@pytest.mark.parametrize("role", ["reader", "admin"])
@pytest.mark.parametrize("sql", CATALOGS)
def test_catalogs_do_not_show_the_secret_tables(server: Server, role: str, sql: str) -> None:
    with server.session(User(role, role)) as session:
        rows = session.run(sql).reader.read_all().to_pylist()
    text = repr(rows).lower()
    assert rows or "pragma" in sql or "indexes" in sql, sql
    assert [s for s in SECRETS if s in text] == [], sql


def test_catalogs_still_show_the_rest(server: Server) -> None:
    with server.session(User("reader", "reader")) as session:
        names = {
            r["table_name"]
            for r in session.run("SELECT * FROM duckdb_tables()").reader.read_all().to_pylist()
        }
    assert {"jobs", "nodes", "dynamic_tables"} <= names


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM system.main.duckdb_columns()",
        "SELECT * FROM main.duckdb_tables()",
        "SELECT * FROM system.main.pragma_table_info('wanka.users')",
    ],
)
def test_the_system_functions_by_their_full_names_are_refused(server: Server, sql: str) -> None:
    with server.session(User("reader", "reader")) as session, pytest.raises(Refused):
        session.run(sql)
