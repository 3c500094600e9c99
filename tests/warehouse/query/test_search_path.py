"""search_path: names resolve in the path's order, and the policy sees what was resolved."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st

from warehouse.query import search_path
from warehouse.security import policy

KNOWN = {
    "main": frozenset({"jobs", "gpu_metrics", "twice"}),
    "wanka": frozenset({"dynamic_tables", "users", "twice"}),
}


def _qualified(sql: str, path: tuple[str, ...]) -> str:
    return search_path.qualify_sql(sql, path, KNOWN)


def test_first_schema_of_the_path_that_holds_the_name_wins() -> None:
    assert _qualified("SELECT * FROM twice", ("wanka", "public")) == "SELECT * FROM wanka.twice"
    assert _qualified("SELECT * FROM twice", ("public", "wanka")) == "SELECT * FROM main.twice"
    assert (
        _qualified("SELECT * FROM jobs JOIN dynamic_tables ON 1 = 1", ("wanka", "public"))
        == "SELECT * FROM main.jobs JOIN wanka.dynamic_tables ON 1 = 1"
    )


def test_qualified_missing_and_with_names_stay_as_written() -> None:
    path = ("wanka",)
    assert _qualified("SELECT * FROM main.twice", path) == "SELECT * FROM main.twice"
    assert _qualified("SELECT * FROM nowhere", path) == "SELECT * FROM nowhere"
    sql = "WITH users AS (SELECT 1 AS x) SELECT * FROM users"
    assert _qualified(sql, path) == sql
    assert _qualified("SELECT * FROM range(3)", path) == "SELECT * FROM range(3)"


def test_subqueries_and_dml_targets_resolve_too() -> None:
    sql = "SELECT (SELECT count(*) FROM dynamic_tables) FROM (SELECT * FROM twice) AS b"
    assert _qualified(sql, ("wanka",)) == (
        "SELECT (SELECT COUNT(*) FROM wanka.dynamic_tables) FROM (SELECT * FROM wanka.twice) AS b"
    )
    assert _qualified("DELETE FROM twice", ("wanka",)) == "DELETE FROM wanka.twice"


def test_text_sqlglot_cannot_read_is_left_alone() -> None:
    for sql in ("SELECT 1; SELECT 2", "PRAGMA version", "SELECT * FROM (((("):
        assert _qualified(sql, ("wanka",)) == sql


def test_a_secret_table_reached_through_the_path_is_refused() -> None:
    cur = duckdb.connect()
    cur.execute("CREATE SCHEMA wanka; CREATE TABLE wanka.users (name VARCHAR, salt BLOB)")
    known = search_path.relations(cur)
    assert "users" in known["wanka"]
    sql = search_path.qualify_sql("SELECT salt FROM users", ("wanka",), known)
    with pytest.raises(policy.Refused, match="users"):
        policy.authorize(cur, sql, "reader")


def test_current_schema_is_the_first_that_exists() -> None:
    assert search_path.current_schema(("$user", "nosuch", "wanka"), KNOWN) == "wanka"
    assert search_path.current_schema(search_path.DEFAULT, {}) == "public"
    assert search_path.current_schema(("nosuch",), KNOWN) is None


_NAMES = st.text(alphabet=st.sampled_from("abcXYZ_$ 1,'\""), min_size=1, max_size=8).filter(
    lambda n: n.strip() == n
)


@given(st.lists(_NAMES, max_size=4))
def test_show_then_parse_gives_the_path_back(names: list[str]) -> None:
    path = tuple(names)
    assert search_path.parse_path(search_path.show(path)) == (path or ("",))


def test_parse_folds_unquoted_names_like_postgresql() -> None:
    assert search_path.parse_path('Wanka, "Mixed", "$user"') == ("wanka", "Mixed", "$user")
    assert sqlglot.parse_one("SELECT 1") is not None
