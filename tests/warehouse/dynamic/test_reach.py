"""How far back a joined row reaches (warehouse.dynamic.plan.reach): the bound it derives holds
for every pair of rows the condition joins, whatever the condition; and it finds the bounds the
shipped per-job table's interval join gives."""

from __future__ import annotations

import duckdb
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from tests.conftest import examples
from warehouse.dynamic.plan.reach import reach
from warehouse.dynamic.shipped import shipped_folder


def _select(sql: str) -> exp.Select:
    tree = sqlglot.parse_one(sql, read="duckdb")
    assert isinstance(tree, exp.Select)
    return tree


def _bound(condition: str) -> str | None:
    found = reach(_select(f"SELECT count(*) FROM f JOIN a ON {condition}"), "f", "t", "a")
    return None if found is None else found.sql("duckdb")


def test_the_shipped_interval_join_reaches_back_to_the_interval_start() -> None:
    text = (shipped_folder() / "job_gpu_usage_daily.sql").read_text()
    select = _select(text[text.index("SELECT") :])
    bound = reach(select, "m", "ts", "a")
    assert bound is not None
    assert bound.sql("duckdb") == "CASE WHEN a.source = 'labels' THEN NULL ELSE a.start_at END"
    assert reach(select, "m", "ts", "m") is None  # the facts themselves: no joined row


def test_each_form_of_a_lower_bound() -> None:
    assert _bound("f.t >= a.s") == "a.s"
    assert _bound("a.s < f.t") == "a.s"
    assert _bound("f.t = a.s + 5") == "a.s + 5"
    assert _bound("f.t BETWEEN a.s AND a.e") == "a.s"
    assert _bound("f.t >= a.s AND f.t >= a.e") == "GREATEST(a.s, a.e)"
    assert _bound("(f.t >= a.s OR f.t >= a.e)") == (
        "CASE WHEN a.s IS NULL OR a.e IS NULL THEN NULL ELSE LEAST(a.s, a.e) END"
    )


def test_what_gives_no_bound() -> None:
    assert _bound("f.t < a.e") is None  # an upper bound only
    assert _bound("f.t >= a.s OR f.v > 0") is None  # one side holds without it
    assert _bound("f.t >= f.v") is None  # the fact row's own column
    assert _bound("f.t >= (SELECT max(s) FROM a)") is None
    assert _bound("NOT f.t < a.s") is None  # not derived: cautious


# a condition over facts f(t, v) and joined rows a(s, e, k): leaves, AND, OR, CASE
LEAVES = [
    "f.t >= a.s",
    "f.t > a.e",
    "a.s <= f.t",
    "a.e < f.t",
    "f.t = a.s",
    "f.t BETWEEN a.s AND a.e",
    "f.t >= a.s + 3",
    "f.t < a.e",
    "a.k = 1",
    "a.k IS NULL",
    "f.v > 2",
    "f.t >= f.v",
    "f.t >= 4",
]
TESTS = ["a.k = 1", "a.k = 2", "a.s > a.e", "f.v > 2", "a.k IS NULL"]
conditions = st.recursive(
    st.sampled_from(LEAVES),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: f"({p[0]} AND {p[1]})"),
        st.tuples(inner, inner).map(lambda p: f"({p[0]} OR {p[1]})"),
        st.tuples(st.sampled_from(TESTS), inner, inner).map(
            lambda p: f"(CASE WHEN {p[0]} THEN {p[1]} ELSE {p[2]} END)"
        ),
        st.tuples(st.sampled_from(TESTS), inner).map(
            lambda p: f"(CASE WHEN {p[0]} THEN {p[1]} END)"
        ),
    ),
    max_leaves=6,
)
small = st.one_of(st.none(), st.integers(0, 9))


@settings(max_examples=examples(3), deadline=None)
@given(
    condition=conditions,
    facts=st.lists(st.tuples(st.integers(0, 9), small), min_size=1, max_size=8),
    joined=st.lists(st.tuples(small, small, small), min_size=1, max_size=6),
)
def test_no_joined_pair_lies_before_the_bound(
    condition: str, facts: list[tuple[int, int | None]], joined: list[tuple[int | None, ...]]
) -> None:
    """For every pair the condition joins, the fact's time is at or after the joined row's
    bound (or the bound is NULL: none); checked by DuckDB on random rows."""
    bound = _bound(condition)
    if bound is None:
        return
    con = duckdb.connect()
    con.execute("CREATE TABLE f (t INTEGER, v INTEGER)")
    con.execute("CREATE TABLE a (s INTEGER, e INTEGER, k INTEGER)")
    con.executemany("INSERT INTO f VALUES (?, ?)", facts)
    con.executemany("INSERT INTO a VALUES (?, ?, ?)", joined)
    before = con.execute(
        f"SELECT count(*) FROM f JOIN a ON {condition} WHERE ({bound}) IS NOT NULL "
        f"AND f.t < ({bound})"
    ).fetchall()[0][0]
    assert before == 0, (condition, bound)


def test_a_case_bounds_by_the_branch_or_by_the_earliest_branch() -> None:
    """The property above is not vacuous: CASEs like the shipped table's give bounds."""
    for condition in [
        "CASE WHEN a.k = 1 THEN f.v > 2 ELSE f.t >= a.s AND f.t < a.e END",
        "CASE WHEN a.k = 1 THEN f.t >= a.e ELSE f.t >= a.s END",
        "CASE WHEN f.v > 2 THEN f.t >= a.e ELSE f.t >= a.s END",
    ]:
        assert _bound(condition) is not None, condition
