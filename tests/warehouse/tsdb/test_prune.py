"""A bounded read of gpu_metrics or its tiers, rewritten to decode only the blocks it needs,
gives what the view gives (property test), and the rewrite takes only bounds it may."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import cast

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import compact, prune, tiers
from warehouse.tsdb.append import append

T0 = datetime(2026, 3, 1, tzinfo=UTC)
METRICS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    """Seven hours of two metrics on three hosts every 5 minutes (the first twice a minute
    then, so that its minutes are tier rows, the other's single samples); the first six hours
    compacted (samples and tier rows), the last hot."""
    with warehouses.engine() as engine:
        cur = engine.cursor()
        rows = [
            {
                "ts": T0 + timedelta(minutes=5 * i),
                "host": f"h{h}",
                "gpu": 0,
                "metric": m,
                "value": float((i * 7 + h * 3) % 50) + (0.5 if m == METRICS[1] else 0.0),
            }
            for i in range(7 * 12)
            for h in range(3)
            for m in METRICS
        ]
        rows += [
            {**r, "ts": cast(datetime, r["ts"]) + timedelta(seconds=20)}
            for r in rows
            if r["metric"] == METRICS[0]
        ]
        append(cur, pa.Table.from_pylist(rows))
        tiers.fold(cur)
        moved = compact.compact(cur, now=T0 + timedelta(hours=6, minutes=30))
        assert {m.tier for m in moved} == {None, *tiers.TIERS}
        cur.close()
        yield engine


#: A time near the samples: often on an hour, where buckets and blocks begin and end.
when = st.one_of(st.integers(-1, 8).map(lambda h: h * 60), st.integers(-30, 8 * 60)).map(
    lambda m: f"TIMESTAMPTZ '{T0 + timedelta(minutes=m)}'"
)
condition = st.one_of(
    st.tuples(st.sampled_from([">", ">=", "<", "<=", "="]), when).map(
        lambda t: f"{{t}} {t[0]} {t[1]}"
    ),
    st.tuples(when, when).map(lambda t: f"{{t}} BETWEEN {t[0]} AND {t[1]}"),
    st.tuples(st.sampled_from(["<", ">="]), when).map(lambda t: f"{t[1]} {t[0]} {{t}}"),
    st.sampled_from(METRICS).map(lambda m: f"metric = '{m}'"),
    st.just(f"metric IN ('{METRICS[0]}', 'x')"),
    st.just("{value} > 20"),
)
#: Each view: its time column, a value column, and the columns read.
VIEWS = {"gpu_metrics": ("ts", "value", "ts, host, metric, value, batch_id")}
VIEWS.update(
    {
        v: (
            "bucket",
            "value_sum",
            "bucket, host, metric, samples, value_sum, value_min, value_last",
        )
        for v in ("gpu_metrics_1m", "gpu_metrics_1h")
    }
)


@settings(
    max_examples=examples(0.5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(view=st.sampled_from(sorted(VIEWS)), conditions=st.lists(condition, min_size=1, max_size=3))
def test_a_bounded_read_gives_what_the_view_gives(
    eng: Engine, view: str, conditions: list[str]
) -> None:
    time, value, columns = VIEWS[view]
    where = " AND ".join(c.format(t=time, value=value) for c in conditions)
    sql = f"SELECT {columns} FROM {view} AS v WHERE {where}"
    cur = eng.cursor()
    try:
        got = Counter(tuple(r.values()) for r in execute(cur, sql).read_all().to_pylist())
        want = Counter(map(tuple, cur.sql(sql).fetchall()))
    finally:
        cur.close()
    assert got == want


def test_the_rewrite_bounds_the_blocks_it_reads() -> None:
    sql = prune.rewrite_sql(
        "SELECT * FROM gpu_metrics m JOIN nodes n USING (host) "
        "WHERE m.ts >= now() - INTERVAL 1 DAY AND m.metric = 'X' AND m.batch_id > $lo"
    )
    assert "ts_max >= CAST(NOW() - INTERVAL '1' DAY AS TIMESTAMPTZ)" in sql
    assert "metric IN ('X')" in sql and "batch_hi >= CAST($lo AS BIGINT)" in sql


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM gpu_metrics",  # no bound
        "SELECT * FROM gpu_metrics WHERE ts > ?",  # a copy of `?` would shift the others
        "SELECT * FROM gpu_metrics WHERE ts > (SELECT max(ts) FROM jobs)",  # a subquery
        "SELECT * FROM gpu_metrics m, jobs j WHERE ts > now()",  # whose ts?
        "SELECT * FROM gpu_metrics m, jobs j WHERE m.ts > j.start_at",  # a column
        "SELECT * FROM gpu_metrics WHERE ts > now() OR value > 1",  # not a conjunct
        "SELECT * FROM (SELECT * FROM gpu_metrics) WHERE ts > now()",  # not its own WHERE
    ],
)
def test_the_rewrite_leaves_what_it_cannot_bound(sql: str) -> None:
    assert prune.rewrite_sql(sql) == sql
