"""One parse per text: the statements, their types, what they read and write, counted parses."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest
import sqlglot

from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine
from warehouse.parsing.reads import explained
from warehouse.parsing.script import is_dynamic, parse
from warehouse.query.executor import execute
from warehouse.security import policy
from warehouse.security.users import User


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


@pytest.fixture
def cur(eng: Engine) -> Iterator[duckdb.DuckDBPyConnection]:
    cursor = eng.cursor()
    yield cursor
    cursor.close()


class CountingCursor:
    """A cursor that counts what DuckDB is asked to parse: statement splits, tree
    serialisations and runs. Everything else goes to the real cursor."""

    def __init__(self, cur: duckdb.DuckDBPyConnection) -> None:
        self.cur = cur
        self.calls: Counter[str] = Counter()

    def extract_statements(self, sql: str) -> Any:
        self.calls["extract_statements"] += 1
        return self.cur.extract_statements(sql)

    def execute(self, sql: Any, params: Any = None) -> Any:
        if isinstance(sql, str) and "json_serialize_sql" in sql:
            self.calls["json_serialize_sql"] += 1
        else:
            self.calls["execute"] += 1
        return self.cur.execute(sql, params)

    def sql(self, query: Any, params: Any = None) -> Any:
        self.calls["run"] += 1
        return self.cur.sql(query, params=params)

    def _submit(
        self, *args: Any
    ) -> Any:  # DuckDB's statement runner (warehouse.query.executor.DIRECT)
        self.calls["run"] += 1
        return self.cur._submit(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cur, name)


@pytest.mark.parametrize(
    ("sql", "analyze", "inner"),
    [
        ("EXPLAIN select 1", False, "select 1"),
        ("explain analyze select 1", True, "select 1"),
        ("/* c */ EXPLAIN (FORMAT json) ANALYZE delete from t", True, "delete from t"),
    ],
)
def test_explained(sql: str, analyze: bool, inner: str) -> None:
    assert explained(sql) == (analyze, inner)


def test_statement_types_in_order(cur: duckdb.DuckDBPyConnection) -> None:
    assert [s.type for s in parse(cur, "select 1").statements] == ["SELECT"]
    two = parse(cur, "select 1; insert into sites (site) values ('x')")
    assert [s.type for s in two.statements] == ["SELECT", "INSERT"] and two.last.type == "INSERT"
    mixed = parse(cur, "select 1; REFRESH DYNAMIC TABLE x; explain select 2")
    assert [s.type for s in mixed.statements] == ["SELECT", "REFRESH DYNAMIC TABLE", "EXPLAIN"]
    assert mixed.statements[1].dynamic is not None and mixed.statements[1].dynamic.verb == "REFRESH"
    assert mixed.statements[2].explained is not None
    assert mixed.statements[2].explained.type == "SELECT"


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ("select 1", False),
        ("with x as (select 1) select * from x", False),
        ("explain select 1", False),
        ("explain analyze select 1", True),
        ("insert into sites (site) values ('x')", True),
        ("with d as (delete from sites returning site) select * from d", True),
        ("begin", False),
        ("commit", False),
        ("create table z (a int)", True),
        ("refresh dynamic table t", True),
        ("select 1; delete from sites", True),
    ],
)
def test_what_writes(cur: duckdb.DuckDBPyConnection, sql: str, writes: bool) -> None:
    assert parse(cur, sql).writes is writes


def test_reads_come_from_the_trees(cur: duckdb.DuckDBPyConnection) -> None:
    select = parse(cur, "select abs(x), count(*) from main.nodes, range(3) group by 1").last
    assert ("", "main", "nodes") in select.reads.tables
    assert select.reads.table_functions == {"range"}
    assert {"abs", "count_star"} <= select.reads.functions
    insert = parse(cur, "insert into jobs select * from read_csv('x.csv')").last
    assert insert.reads.target == ("", "jobs") and "read_csv" in insert.reads.table_functions
    command = parse(cur, "vacuum").last  # a statement sqlglot does not model
    assert command.type == "VACUUM" and command.reads.command_words == ("VACUUM",)


def test_dynamic_statements_are_recognised_by_their_tokens_only() -> None:
    assert is_dynamic("CREATE DYNAMIC TABLE t WITH (freshness = '1 hour') AS SELECT 1")
    assert is_dynamic("select 1; drop  dynamic  table t")
    assert not is_dynamic("select 'refresh dynamic table t'")
    assert not is_dynamic("select dynamic from t")


def test_bad_sql_and_empty_text_are_user_errors(cur: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UserError, match="syntax error"):
        parse(cur, "selec 1")
    with pytest.raises(UserError, match="no SQL statement"):
        parse(cur, " ; ")
    with pytest.raises(UserError, match="cannot parse CREATE DYNAMIC TABLE"):
        parse(cur, "create dynamic table t with (freshness = '1 hour') as select (")


def test_a_text_is_parsed_once_a_run_and_kept_once_it_comes_back(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    sql = "select 40 + 2 AS answer /* test_a_text_is_parsed_once */"
    counting = CountingCursor(cur)
    script = parse(counting, sql)  # type: ignore[arg-type]
    policy.authorize(counting, script, "reader")  # type: ignore[arg-type]
    assert execute(counting, script).read_all().column(0).to_pylist() == [42]  # type: ignore[arg-type]
    assert counting.calls == {"extract_statements": 1, "json_serialize_sql": 1, "run": 1}
    second = CountingCursor(cur)  # seen once: not kept, parsed again, and kept now
    kept = parse(second, sql)  # type: ignore[arg-type]
    assert kept is not script and kept.statements[0].reads == script.statements[0].reads
    assert second.calls == {"extract_statements": 1, "json_serialize_sql": 1}
    again = CountingCursor(cur)
    assert parse(again, sql) is kept  # type: ignore[arg-type]
    assert again.calls == {}


def test_texts_seen_once_are_not_kept(cur: duckdb.DuckDBPyConnection) -> None:
    """The PromQL paths write times into their SQL: a server must not keep a parse tree of
    each (~24 KB for 700 characters) until the cache is full."""
    from warehouse.parsing import script

    before = len(script._CACHE)
    for i in range(50):
        parse(cur, f"select {i} AS once /* test_texts_seen_once_are_not_kept */")
    assert len(script._CACHE) == before
    assert len(script._SEEN) <= script._SEEN_MAX


def test_a_session_parses_a_query_once_from_policy_to_execution(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `POST /v1/query` and pgwire do: Session.run on text it has not seen before."""
    from service.serve.session import Session

    sqlglot_parses = Counter[str]()
    real_parse_one = sqlglot.parse_one  # the module warehouse.parsing.reads parses DML and DDL with

    def counting_parse_one(sql: str, **options: Any) -> Any:
        sqlglot_parses[sql] += 1
        return real_parse_one(sql, **options)

    monkeypatch.setattr(sqlglot, "parse_one", counting_parse_one)
    counting = CountingCursor(eng.cursor())
    admin = User("ann", "admin")
    with Session(counting, admin) as session:  # type: ignore[arg-type]
        session.run("create table parsed_once (a int)")
        session.run("insert into parsed_once values (1), (2)").reader.read_all()
        rows = session.run("select sum(a) from parsed_once").reader.read_all()
    assert rows.column(0).to_pylist() == [3]
    assert counting.calls["extract_statements"] == 3  # one per text
    assert counting.calls["json_serialize_sql"] == 1  # the SELECT's tree, for the policy
    assert counting.calls["run"] == 3  # and nothing else: no parse before each run
    assert set(counting.calls) == {"extract_statements", "json_serialize_sql", "run"}
    assert sorted(sqlglot_parses.values()) == [1, 1]  # the CREATE's and the INSERT's trees
