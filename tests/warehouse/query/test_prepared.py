"""SELECT texts run again are EXECUTEd prepared, and answer exactly what the text would."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

from tests.warehouses import Warehouses
from warehouse.query import executor, prepared

_unique = itertools.count()


@pytest.fixture
def cur(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouses.engine() as engine:
        cursor = engine.cursor()
        yield cursor
        cursor.close()


def rows(cur: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = executor.execute(cur, sql, params).read_all().to_pylist()
    return out


def fresh(sql: str) -> str:
    """`sql` with a comment no other test sends: a text this process has not run yet."""
    return f"{sql} /* {__name__} {next(_unique)} */"


def test_a_text_is_prepared_on_its_second_run_and_executed_after(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    sql = fresh("SELECT 41 + 1 AS answer")
    assert prepared.name_for(cur, sql) is None  # first run: as text
    name = prepared.name_for(cur, sql)
    assert name is not None and name.startswith("wanka_prepared_")
    assert prepared.name_for(cur, sql) == name  # then the same statement each time
    assert rows(cur, sql) == [{"answer": 42}]
    assert cur.execute(f"EXECUTE {name}").fetchall() == [(42,)]


def test_prepared_answers_follow_the_catalog_and_the_clock(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    cur.execute("CREATE TABLE p (a INTEGER)")
    cur.execute("INSERT INTO p VALUES (1)")
    sql = fresh("SELECT * FROM p")
    assert rows(cur, sql) == rows(cur, sql) == [{"a": 1}]
    cur.execute("ALTER TABLE p ADD COLUMN b VARCHAR DEFAULT 'x'")
    assert rows(cur, sql) == [{"a": 1, "b": "x"}]
    cur.execute("DROP TABLE p")
    cur.execute("CREATE TABLE p (z DOUBLE)")
    assert rows(cur, sql) == []
    clock = fresh("SELECT now() AS t, random() AS r")
    seen = {tuple(rows(cur, clock)[0].values()) for _ in range(4)}
    assert len(seen) == 4  # evaluated per execution, never folded into the plan


def test_a_cursor_that_lost_its_statement_prepares_it_again(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    sql = fresh("SELECT 7 AS seven")
    rows(cur, sql)
    rows(cur, sql)
    name = prepared.name_for(cur, sql)
    cur.execute(f"DEALLOCATE {name}")  # as a new cursor with a closed one's id would be
    assert rows(cur, sql) == [{"seven": 7}]
    again = prepared.name_for(cur, sql)
    assert again is not None and again != name


def test_texts_with_parameters_or_that_cannot_be_prepared_run_as_text(
    cur: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(prepared, "name_for", lambda c, t: asked.append(t))
    sql = fresh("SELECT ? * 2 AS d")
    assert rows(cur, sql, [21]) == rows(cur, sql, [21]) == [{"d": 42}]
    assert asked == []  # never asked: parameters bind to the text
    monkeypatch.undo()
    show = fresh("DESCRIBE SELECT 1 AS x")
    assert rows(cur, show) == rows(cur, show) == rows(cur, show)


def test_each_cursor_keeps_at_most_per_cursor_statements(
    cur: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prepared, "PER_CURSOR", 2)
    texts = [fresh(f"SELECT {i} AS i") for i in range(3)]
    names = []
    for sql in texts:
        rows(cur, sql)
        rows(cur, sql)
        names.append(prepared.name_for(cur, sql))
    with pytest.raises(duckdb.BinderException, match="does not exist"):
        cur.execute(f"EXECUTE {names[0]}")  # the oldest was deallocated
    assert cur.execute(f"EXECUTE {names[2]}").fetchall() == [(2,)]


def test_names_follow_the_cursor_not_its_address(
    warehouses: Warehouses, cur: duckdb.DuckDBPyConnection
) -> None:
    """A new cursor in a closed one's memory (same id()) has none of its prepared statements."""
    import gc

    with warehouses.engine() as engine:
        sql = fresh("SELECT 5 AS five")
        reused = False
        for _ in range(50):
            old = engine.cursor()
            rows(old, sql)
            rows(old, sql)
            address = id(old)
            old.close()
            del old
            gc.collect()
            new = engine.cursor()
            reused = id(new) == address
            if reused:
                new.execute("BEGIN TRANSACTION")  # where a missing statement would abort it
                assert rows(new, sql) == [{"five": 5}]
                new.execute("COMMIT")
                new.close()
                break
            new.close()
        assert reused, "CPython never reused the cursor's memory: the case was not exercised"


def test_a_session_prepares_nothing_inside_a_transaction(cur: duckdb.DuckDBPyConnection) -> None:
    from service.serve.session import Session
    from tests.warehouse.parsing.test_script import CountingCursor
    from warehouse.security.users import User

    sql = fresh("SELECT 6 AS six")
    counting = CountingCursor(cur)
    with Session(counting, User("ann", "admin")) as session:  # type: ignore[arg-type]
        session.run("BEGIN")
        for _ in range(3):
            assert session.run(sql).reader.read_all().to_pylist() == [{"six": 6}]
        session.run("COMMIT")
        assert counting.calls["execute"] == 0  # no PREPARE: transaction control runs as text
        for _ in range(3):
            assert session.run(sql).reader.read_all().to_pylist() == [{"six": 6}]
        assert counting.calls["execute"] == 1  # outside it, the PREPARE of its second run
