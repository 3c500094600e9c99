"""time_bucket over the views' time column as integer arithmetic gives DuckDB's time_bucket,
in any time zone, and the rewrite takes only the calls it may."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import duckdb
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.tsdb.test_prune import eng  # noqa: F401  (the fixture)
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import buckets, prune

ZONES = ("UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Chatham")
UNITS = ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK")
#: µs since the epoch, from 1900 to 2200, often near a whole hour or day.
micros = st.one_of(
    st.integers(-2_208_988_800_000_000, 7_258_118_400_000_000),
    st.integers(-(10**6), 10**6).map(lambda h: h * 3_600_000_000),
    st.integers(-(10**5), 10**5).map(lambda d: d * 86_400_000_000 + 1),
)
interval = st.one_of(
    st.tuples(st.integers(1, 1000), st.sampled_from(UNITS)).map(
        lambda t: f"INTERVAL {t[0]} {t[1]}"
    ),
    st.sampled_from(["INTERVAL '90 minutes'", "INTERVAL '1 hour'", "'15 seconds'::INTERVAL"]),
)


@pytest.fixture(scope="module")
def db() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    yield con
    con.close()


@settings(
    max_examples=examples(1),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    times=st.lists(micros, min_size=1, max_size=20),
    width=interval,
    zone=st.sampled_from(ZONES),
)
def test_the_arithmetic_gives_time_bucket(
    db: duckdb.DuckDBPyConnection, times: list[int], width: str, zone: str
) -> None:
    node = sqlglot.parse_one(width, dialect="duckdb")
    us = buckets.width_us(node)
    assert us is not None and us > 0
    db.execute(f"SET TimeZone = '{zone}'")
    db.execute("CREATE OR REPLACE TEMP TABLE t (ts TIMESTAMPTZ)")
    db.executemany("INSERT INTO t SELECT make_timestamptz(?)", [[m] for m in times])
    db.execute("INSERT INTO t VALUES (NULL), ('infinity'), ('-infinity')")
    got = db.sql(
        f"SELECT ts, time_bucket({width}, ts), {buckets.expression('ts', us)} FROM t"
    ).fetchall()
    assert [r[1] for r in got] == [r[2] for r in got]


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("INTERVAL 1 HOUR", 3_600_000_000),
        ("INTERVAL '90 minutes'", 5_400_000_000),
        ("INTERVAL 2 WEEK", 14 * 86_400_000_000),
        ("INTERVAL '1 month'", None),  # no fixed width
        ("INTERVAL '1 day 1 hour'", None),  # time_bucket refuses it
        ("INTERVAL '0 seconds'", None),
        ("INTERVAL '-1 hour'", None),
        ("'1 hour'", None),  # a string, not an INTERVAL
    ],
)
def test_a_width_is_taken_only_when_fixed(sql: str, want: int | None) -> None:
    assert buckets.width_us(sqlglot.parse_one(sql, dialect="duckdb")) == want


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT time_bucket(INTERVAL '1 month', ts) FROM gpu_metrics",  # no fixed width
        "SELECT time_bucket(INTERVAL 1 HOUR, ts, INTERVAL 30 MINUTE) FROM gpu_metrics",  # offset
        "SELECT time_bucket($w, ts) FROM gpu_metrics",  # not a constant
        "SELECT time_bucket(INTERVAL 1 HOUR, j.ts) FROM gpu_metrics g, jobs j",  # not the view's
        "SELECT time_bucket(INTERVAL 1 HOUR, ts) FROM gpu_metrics g, jobs j",  # whose ts?
        "SELECT time_bucket(INTERVAL 1 HOUR, last_ts) FROM gpu_metrics_1h",  # not its time column
        "SELECT (SELECT time_bucket(INTERVAL 1 HOUR, ts) FROM x) FROM gpu_metrics",  # x's ts
        # sqlglot would write the zone unquoted: nothing of such a statement is rewritten
        "SELECT time_bucket(INTERVAL 1 HOUR, ts, 'Europe/Paris') FROM gpu_metrics WHERE ts > now()",
    ],
)
def test_the_rewrite_leaves_what_it_may_not_take(sql: str) -> None:
    assert "make_timestamptz" not in prune.rewrite_sql(sql).lower()


def test_a_rewritten_column_keeps_its_name(eng: Engine) -> None:  # noqa: F811
    sql = "SELECT time_bucket(INTERVAL '1' HOUR, ts), count(*) AS n FROM gpu_metrics GROUP BY 1"
    assert "MAKE_TIMESTAMPTZ" in prune.rewrite_sql(sql)
    cur = eng.cursor()
    try:
        got = execute(cur, sql).read_all()
        want = cur.sql(sql)
        assert got.schema.names == want.columns
        assert sorted(got.to_pylist(), key=str) == sorted(
            (dict(zip(want.columns, r, strict=True)) for r in want.fetchall()), key=str
        )
    finally:
        cur.close()


@settings(
    max_examples=examples(0.3),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    view=st.sampled_from(
        [("gpu_metrics", "ts"), ("gpu_metrics_1m", "bucket"), ("gpu_metrics_1h", "bucket")]
    ),
    width=st.sampled_from(
        ["INTERVAL 7 MINUTE", "INTERVAL 1 HOUR", "INTERVAL 2 HOUR", "INTERVAL 1 DAY"]
    ),
    zone=st.sampled_from(ZONES),
    bounded=st.booleans(),
)
def test_a_query_gives_what_time_bucket_gives(
    eng: Engine,  # noqa: F811
    view: tuple[str, str],
    width: str,
    zone: str,
    bounded: bool,
) -> None:
    name, time = view
    where = f"WHERE {time} >= TIMESTAMPTZ '2026-03-01 01:00:00+00'" if bounded else ""
    sql = (
        f"SELECT host, time_bucket({width}, {time}) AS b, count(*) AS n FROM {name} {where} "
        "GROUP BY ALL"
    )
    cur = eng.cursor()
    try:
        cur.execute(f"SET TimeZone = '{zone}'")
        got = Counter(tuple(r.values()) for r in execute(cur, sql).read_all().to_pylist())
        want = Counter(map(tuple, cur.sql(sql).fetchall()))
    finally:
        cur.execute("SET TimeZone = 'UTC'")
        cur.close()
    assert got == want and got
