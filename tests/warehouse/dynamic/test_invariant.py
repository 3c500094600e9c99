"""THE invariant: after any inserts, updates and deletes, an incremental refresh gives exactly
the defining query's result."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.dynamic.dimension import place_node
from tests.warehouse.samples import insert_samples, minute
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

QUERIES = {
    "rollup": (
        "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, avg(value) AS a, "
        "sum(value) AS s, count(*) AS n, count(value) AS nv, min(value) AS mn, max(value) AS mx, "
        # the last and first value; the value breaks ties of ts, so a recompute picks the same
        "arg_max(value, (ts, value)) AS last, arg_min(value, (ts, value)) FILTER "
        "(WHERE metric = 'U') AS first_u FROM gpu_metrics WHERE metric <> 'X' GROUP BY ALL"
    ),
    "filter": "SELECT ts, host, value * 2 AS v FROM gpu_metrics WHERE value > 0.5 OR value IS NULL",
    # a 'groups' plan; gpu is always NULL here: a NULL group key
    "distinct": (
        "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, gpu, "
        "count(DISTINCT value) AS d, median(value) AS med, quantile_cont(value, 0.9) AS p90, "
        "list(value ORDER BY value) AS vs FROM gpu_metrics WHERE metric <> 'X' GROUP BY ALL"
    ),
    # a join with a dimension whose rows are inserted, updated and deleted too
    "join": (
        "SELECT time_bucket(INTERVAL '1 hour', m.ts) AS hour, n.cluster, sum(m.value) AS s, "
        "count(*) AS n, count(DISTINCT m.host) AS hosts FROM gpu_metrics m "
        "JOIN nodes n ON n.host = m.host WHERE m.metric <> 'X' GROUP BY ALL"
    ),
    "join_projection": (
        "SELECT m.ts, m.host, n.cluster, m.value FROM gpu_metrics m JOIN nodes n USING (host)"
    ),
    # a chain: a daily rollup of the hourly rollup `up` (created first, refreshed before it)
    "chain": (
        "SELECT date_trunc('day', hour) AS day, host, sum(s) AS s, sum(n) AS n, max(mx) AS mx, "
        "count(*) AS hours FROM up GROUP BY ALL"
    ),
}

#: Plans that take updates and deletes without a full refresh.
NEVER_FULL = {"rollup": "aggregate", "distinct": "groups", "join": "groups", "chain": "groups"}

#: The upstream dynamic table of the chain.
UP = (
    "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, sum(value) AS s, count(*) AS n, "
    "max(value) AS mx FROM gpu_metrics WHERE metric <> 'X' GROUP BY ALL"
)

row = st.tuples(
    st.integers(0, 300),  # minutes after the start
    st.sampled_from(["a", "b", None]),
    st.sampled_from(["U", "P", "X"]),
    st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False)),
)
step = st.one_of(
    st.tuples(st.just("insert"), st.lists(row, min_size=0, max_size=8)),
    st.tuples(st.just("delete"), st.floats(-1e3, 1e3, allow_nan=False)),
    st.tuples(st.just("update"), st.floats(-1e3, 1e3, allow_nan=False)),
    st.tuples(st.just("refresh"), st.none()),
    st.tuples(
        st.just("node"), st.tuples(st.sampled_from(["a", "b", "z"]), st.sampled_from(["c1", "c2"]))
    ),
    st.tuples(st.just("node_delete"), st.sampled_from(["a", "b", "z"])),
)


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


def _apply(eng: Engine, action: str, arg: object) -> None:
    con = eng.con
    if action == "insert" and arg:
        assert isinstance(arg, list)
        insert_samples(
            con,
            [
                {"ts": minute(m), "host": "z" if h is None else h, "metric": metric, "value": v}
                for m, h, metric, v in arg
            ],
        )
    elif action == "delete":
        execute(con, "DELETE FROM gpu_metrics WHERE value < ?", [arg]).read_all()
    elif action == "update":
        execute(con, "UPDATE gpu_metrics SET value = value + 1 WHERE value > ?", [arg]).read_all()
    elif action == "node":
        assert isinstance(arg, tuple)
        place_node(con, *arg)
    elif action == "node_delete":
        con.execute("DELETE FROM nodes WHERE host = ?", [arg])


def _same(got: list[tuple[object, ...]], want: list[tuple[object, ...]]) -> bool:
    if len(got) != len(want):
        return False
    key = lambda r: tuple((v is None, str(v)) for v in r)  # noqa: E731
    for g, w in zip(sorted(got, key=key), sorted(want, key=key), strict=True):
        for a, b in zip(g, w, strict=True):
            if isinstance(a, float) and isinstance(b, float):
                if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6):
                    return False
            elif a != b:
                return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(QUERIES))
@settings(
    max_examples=examples(0.25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(step, min_size=1, max_size=10))
def test_incremental_refresh_equals_the_query(
    eng: Engine, kind: str, steps: list[tuple[str, object]]
) -> None:
    con = eng.con
    cur = eng.cursor()
    for table in ("dt", "up"):
        execute(cur, f"DROP DYNAMIC TABLE IF EXISTS {table}").read_all()
    execute(con, "DELETE FROM gpu_metrics").read_all()
    con.execute("DELETE FROM nodes")
    query = QUERIES[kind]
    mode = "incremental"
    chained = kind == "chain"
    if chained:
        execute(cur, f"CREATE DYNAMIC TABLE up WITH (freshness = '1 hour') AS {UP}").read_all()
    made = execute(
        cur,
        f"CREATE DYNAMIC TABLE dt WITH (freshness = '1 hour', refresh_mode = '{mode}') AS {query}",
    ).read_all()
    if kind in NEVER_FULL:
        assert made.column("refresh_mode").to_pylist() == [NEVER_FULL[kind]]
    for action, arg in [*steps, ("refresh", None)]:
        _apply(eng, action, arg)
        if chained:
            execute(cur, "REFRESH DYNAMIC TABLE up").read_all()
        done = execute(cur, "REFRESH DYNAMIC TABLE dt").read_all().to_pylist()[0]
        if kind in NEVER_FULL:
            assert done["refresh_mode"] in ("incremental", "no_data"), done
        got = con.sql("SELECT * FROM dt").fetchall()
        want = con.sql(query).fetchall()
        assert _same(got, want), (action, arg, got, want)
    cur.close()
