"""The statement policy per role, on golden cases (policy_cases.sql) and attack strings."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.security.policy import Refused, authorize

CASES = Path(__file__).with_name("policy_cases.sql")


@dataclass(frozen=True)
class Case:
    role: str
    allowed: bool
    expected: str
    sql: str
    line: int


def load_cases(path: Path = CASES) -> list[Case]:
    """Header lines `-- ROLE allowed` / `-- ROLE refused: TEXT`, each followed by its SQL."""
    cases: list[Case] = []
    header: tuple[str, bool, str, int] | None = None
    body: list[str] = []

    def flush() -> None:
        if header is not None:
            role, allowed, expected, line = header
            cases.append(Case(role, allowed, expected, "\n".join(body).strip(), line))

    for number, line in enumerate(path.read_text().splitlines(), start=1):
        words = line.removeprefix("-- ").split(" ", 1)
        if line.startswith("-- ") and words[0] in {"reader", "writer", "admin"}:
            flush()
            verdict, _, expected = words[1].partition(":")
            header, body = (words[0], verdict == "allowed", expected.strip(), number), []
        elif header is not None:
            body.append(line)
    flush()
    return cases


@pytest.fixture(scope="module")
def cur(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouses.engine() as engine:
        cursor = engine.cursor()
        yield cursor
        cursor.close()


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: f"{c.line}-{c.role}")
def test_golden_case(cur: duckdb.DuckDBPyConnection, case: Case) -> None:
    if case.allowed:
        authorize(cur, case.sql, case.role)
        return
    with pytest.raises(Refused) as refused:
        authorize(cur, case.sql, case.role)
    assert case.expected.lower() in str(refused.value).lower()


def test_cases_cover_every_role() -> None:
    cases = load_cases()
    assert len(cases) > 80
    for role in ("reader", "writer", "admin"):
        assert {c.allowed for c in cases if c.role == role} == {True, False}


def test_refused_reader_statement_runs_nothing(cur: duckdb.DuckDBPyConnection) -> None:
    cur.execute("CREATE TABLE victim (a INTEGER)")
    with pytest.raises(Refused):
        authorize(cur, "DROP TABLE victim", "reader")
    assert cur.execute("SELECT count(*) FROM victim").fetchall() == [(0,)]


def test_bad_sql_is_a_user_error_not_a_refusal(cur: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UserError) as error:
        authorize(cur, "selec 1", "reader")
    assert not isinstance(error.value, Refused)


def test_unknown_role_is_refused(cur: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UserError, match="unknown role"):
        authorize(cur, "select 1", "root")
