"""Cold samples read through registered scans give what `wanka_block()` gives (property test),
a statement whose blocks change as it starts fails with MOVED and the executor runs it again,
and what a scan cannot take is left to the function."""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.kernel import ahead, blocks
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import cold_scan, compact, relations, tier_blocks, tiers
from warehouse.tsdb.append import append

T0 = datetime(2026, 3, 1, tzinfo=UTC)
METRICS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
HOURS = 7

pytestmark = pytest.mark.skipif(not cold_scan.AVAILABLE, reason="no Arrow sources in this DuckDB")


def _rows(hours: range, every_min: int = 5) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "ts": T0 + timedelta(hours=h, minutes=every_min * i),
                "host": f"h{host}",
                "gpu": 0,
                "metric": m,
                "value": [float(i % 7), float("nan"), -0.0, float("inf")][(i + host) % 4],
            }
            for h in hours
            for i in range(60 // every_min)
            for host in range(4)
            for m in METRICS
        ]
    )


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    """Seven hours of two metrics on four hosts every 5 minutes, appended in two batches; the
    first six hours compacted, the last hot."""
    with warehouses.engine() as engine:
        cur = engine.cursor()
        append(cur, _rows(range(0, 3)))
        append(cur, _rows(range(3, HOURS)))
        assert compact.compact(cur, now=T0 + timedelta(hours=6, minutes=30))
        cur.close()
        yield engine


def _bag(cur: duckdb.DuckDBPyConnection, sql: str) -> Counter[tuple[Any, ...]]:
    """The rows of `sql`, floats by their bits."""
    return _bits(cur.sql(sql).fetchall())


def _bits(rows: Iterable[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    """The rows, floats by their bits (a NaN equals itself)."""
    return Counter(
        tuple(struct.pack("<d", v) if isinstance(v, float) else v for v in row) for row in rows
    )


when = st.one_of(st.none(), st.integers(-30, (HOURS + 1) * 60)).map(
    lambda m: None if m is None else f"TIMESTAMPTZ '{T0 + timedelta(minutes=m)}'"
)
batch = st.one_of(st.none(), st.integers(0, 3).map(str))
#: The property tests' settings: each example reads the module's warehouse.
PROPERTY = settings(
    max_examples=examples(0.5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@PROPERTY
@given(
    ts=st.tuples(when, when),
    batches=st.tuples(batch, batch),
    series=st.one_of(st.none(), st.sets(st.integers(-2, 10), max_size=4)),
    metric=st.one_of(st.none(), st.sampled_from(METRICS)),
    columns=st.sampled_from(["*", "series_id, value", "ts", "value, batch_id", "batch_id"]),
)
def test_a_scan_reads_what_the_function_reads(
    eng: Engine,
    ts: tuple[str | None, str | None],
    batches: tuple[str | None, str | None],
    series: set[int] | None,
    metric: str | None,
    columns: str,
) -> None:
    """Whatever the bounds, and whichever columns the query reads (a scan decodes only those
    and the ones its bounds need)."""
    wanted = None
    if series is not None:
        wanted = " UNION ALL ".join(f"SELECT {i}" for i in sorted(series)) or "SELECT 0 WHERE false"
    decode = relations.cold(ts, batches, wanted, None if metric is None else f"'{metric}'")
    sql = f"SELECT {columns} FROM ({decode})"
    cur = eng.cursor()
    try:
        bound = cold_scan.bind(cur, sql)
        assert bound is not None and bound.names == ["_wanka_cold_0"]
        assert _bag(cur, bound.sql) == _bag(cur, sql)
    finally:
        cur.close()


def test_bounds_may_read_the_statements_ctes(eng: Engine) -> None:
    """PromQL's decodes name the series by a CTE of the statement: the scan reads it too."""
    held = relations.samples(ts=(f"TIMESTAMPTZ '{T0}'", None), series="SELECT sid FROM chosen")
    sql = (
        "WITH chosen AS (SELECT series_id AS sid FROM wanka.gpu_series WHERE host = 'h1'),\n"
        f"got AS (SELECT s.* FROM {held} s JOIN chosen ON s.series_id = chosen.sid)\n"
        "SELECT * FROM got"
    )
    cur = eng.cursor()
    try:
        bound = cold_scan.bind(cur, sql)
        assert bound is not None and "wanka_block" not in bound.sql.lower()
        got = _bag(cur, bound.sql)
        assert got == _bag(cur, sql) and len(got) == HOURS * 12 * len(METRICS)
    finally:
        cur.close()


@pytest.mark.parametrize(
    "sql",
    [
        "WITH a AS (SELECT 1), b AS (SELECT 2) SELECT * FROM (HERE)",
        "WITH a AS (SELECT 1), b AS (SELECT 2), c AS (SELECT * FROM (HERE)) SELECT * FROM c",
        "WITH a AS (SELECT ',' AS x) SELECT * FROM (HERE)",
    ],
)
def test_the_ctes_before_a_decode(sql: str) -> None:
    at = sql.index("HERE")
    assert cold_scan._ctes(sql, at) in (
        "WITH a AS (SELECT 1), b AS (SELECT 2) ",
        "WITH a AS (SELECT ',' AS x) ",
    )
    assert cold_scan._ctes("SELECT * FROM (HERE)", 15) == ""
    assert cold_scan._ctes("WITH a AS (SELECT * FROM (HERE)) SELECT 1", 26) == ""


def test_blocks_that_change_as_a_statement_starts_make_it_run_again(
    warehouses: Warehouses, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction commits between the scan's reading of the blocks and the statement's start:
    the statement's guard fails with MOVED, and the executor binds and runs it again, so no
    sample is missed (the compacted ones were hot when the blocks were read)."""
    sql = f"SELECT count(*) AS n FROM gpu_metrics WHERE ts >= TIMESTAMPTZ '{T0}'"
    with warehouses.engine() as engine:
        cur, other = engine.cursor(), engine.cursor()
        append(cur, _rows(range(0, 4)))
        compact.compact(cur, now=T0 + timedelta(hours=2, minutes=30))
        [(want,)] = cur.sql(sql).fetchall()
        bind, calls = cold_scan.bind, []

        def bind_then_compact(c: duckdb.DuckDBPyConnection, text: str, params: Any) -> Any:
            bound = bind(c, text, params)
            calls.append(bound)
            if len(calls) == 1:
                assert bound is not None
                assert compact.compact(other, now=T0 + timedelta(hours=4, minutes=30))
                with pytest.raises(duckdb.Error, match=cold_scan.MOVED):
                    c.sql(bound.sql).fetchall()
            return bound

        monkeypatch.setattr(cold_scan, "bind", bind_then_compact)
        assert execute(cur, sql, prepare=False).read_all().to_pylist() == [{"n": want}]
        assert len(calls) == 2 and all(b is not None for b in calls)
        cur.close()
        other.close()


def test_a_read_to_its_end_drops_its_scans(eng: Engine) -> None:
    cur = eng.cursor()
    try:
        sql = f"SELECT count(*) AS n FROM gpu_metrics WHERE ts >= TIMESTAMPTZ '{T0}'"
        reader = execute(cur, sql, prepare=False)
        assert cold_scan._HELD.get(cur) == ["_wanka_cold_0"]  # the result still open
        assert reader.read_all().to_pylist() == [{"n": HOURS * 12 * 4 * len(METRICS)}]
        assert cur not in cold_scan._HELD
        with pytest.raises(duckdb.CatalogException):
            cur.sql("SELECT * FROM _wanka_cold_0").fetchall()
    finally:
        cur.close()


def test_named_parameters_bound_a_scan_and_positional_ones_the_function(eng: Engine) -> None:
    """A read bounded by named parameters (`$from`) is read through a scan, and gives what the
    view gives with the same values; one with positional parameters is left to the function."""
    lo, hi = T0 + timedelta(hours=1, minutes=7), T0 + timedelta(hours=5)
    where = "metric = $m AND ts >= $from AND ts < $to"
    sql = f"SELECT host, gpu, metric, ts, value FROM gpu_metrics WHERE {where}"
    params = {"m": METRICS[0], "from": lo, "to": hi}
    cur = eng.cursor()
    try:
        reader = execute(cur, sql, params, prepare=False)
        assert cold_scan._HELD.get(cur) == ["_wanka_cold_0"]
        got = _bits(tuple(r.values()) for r in reader.read_all().to_pylist())
        want = _bits(cur.sql(sql, params=params).fetchall())
        assert got == want and sum(got.values()) > 0
        positional = sql.replace("$m", "$1").replace("$from", "$2").replace("$to", "$3")
        reader = execute(cur, positional, [METRICS[0], lo, hi], prepare=False)
        assert cur not in cold_scan._HELD
        assert _bits(tuple(r.values()) for r in reader.read_all().to_pylist()) == want
    finally:
        cur.close()


def test_what_a_scan_cannot_take_is_left_to_the_function(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    cur = eng.cursor()
    try:
        decode = relations.cold()
        assert cold_scan.bind(cur, "SELECT 1") is None
        # bounds that name a column of the outer query cannot be read on their own
        outer = decode.replace("wanka_block(data, NULL", "wanka_block(data, g.t", 1)
        correlated = f"SELECT * FROM (SELECT now() AS t) g, LATERAL ({outer})"
        assert cold_scan.bind(cur, correlated) is None
        monkeypatch.setattr(cold_scan, "BUDGET", 10)
        assert cold_scan.bind(cur, f"SELECT * FROM ({decode})") is None
        monkeypatch.setattr(cold_scan, "BUDGET", 10**9)
        assert cold_scan.bind(cur, f"SELECT * FROM ({decode})") is not None
        cold_scan.release(cur)
        with pytest.raises(duckdb.CatalogException):
            cur.sql("SELECT * FROM _wanka_cold_0").fetchall()
    finally:
        cur.close()


def test_blocks_are_decoded_ahead_in_order_and_no_further_than_asked() -> None:
    """The scan's batches come in block order though decoded on threads; a reader that stops
    after the first leaves at most `AHEAD` more decoded, the rest never started."""
    samples = [
        blocks.Samples(
            np.full(3, k, dtype=np.int32),
            np.arange(3, dtype=np.int64) * 1_000_000 + k * 10_000_000,
            np.arange(3, dtype=np.float64) + k,
            np.full(3, k, dtype=np.int64),
        )
        for k in range(20)
    ]
    kind = cold_scan._KINDS[blocks.FUNCTION]
    planned = cold_scan._Planned(
        kind, [None] * 5, [blocks.encode(s) for s in samples], 60, 20, 0, ""
    )
    scan = cold_scan._Scan(planned)
    decoded: list[int] = []
    batch = scan._batch

    def counted(data: bytes, schema: pa.Schema, chosen: list[int]) -> pa.RecordBatch:
        decoded.append(planned.data.index(data))
        return batch(data, schema, chosen)

    scan._batch = counted  # type: ignore[method-assign]
    every = list(scan._batches(cold_scan.SCHEMA, [0, 1, 2, 3]))  # every column: the schema
    assert [b.column(0)[0].as_py() for b in every] == list(range(20))
    decoded.clear()
    two = pa.schema([cold_scan.SCHEMA.field(0), cold_scan.SCHEMA.field(2)])
    first = scan._batches(two, [0, 2])
    assert next(first).column(1).to_pylist() == [0.0, 1.0, 2.0]
    first.close()
    ahead._WORKERS.submit(lambda: None).result()  # what was started has finished
    assert 1 <= len(decoded) <= 1 + cold_scan.AHEAD


@pytest.fixture(scope="module")
def tiered(warehouses: Warehouses) -> Iterator[Engine]:
    """Samples every 30 s (a minute of the 1-minute tier holds two) folded into the tiers, then
    compacted: the tiers' rows of the first six hours in blocks."""
    with warehouses.engine() as engine:
        cur = engine.cursor()
        minutes = _rows(range(0, HOURS), every_min=1)
        append(cur, minutes)
        later = pc.add(minutes["ts"], pa.scalar(timedelta(seconds=30), pa.duration("us")))
        append(cur, minutes.set_column(minutes.schema.get_field_index("ts"), "ts", later))
        tiers.fold(cur)
        compact.compact(cur, now=T0 + timedelta(hours=6, minutes=30))
        held = cur.sql("SELECT count(DISTINCT tier) FROM wanka.tier_blocks").fetchall()[0][0]
        assert held == len(tiers.TIERS)
        cur.close()
        yield engine


@PROPERTY
@given(
    ts=st.tuples(when, when),
    tier=st.sampled_from(sorted(tiers.TIERS)),
    metric=st.one_of(st.none(), st.sampled_from(METRICS)),
    columns=st.sampled_from(["*", "series_id, value_sum", "bucket, samples", "last_ts, value_max"]),
)
def test_a_scan_reads_a_tiers_blocks_as_the_function_does(
    tiered: Engine,
    ts: tuple[str | None, str | None],
    tier: str,
    metric: str | None,
    columns: str,
) -> None:
    """The tiers' blocks too (`wanka_tier_block`): the hot rows and the blocks' together."""
    rows = tier_blocks.rows(tier, *ts, None if metric is None else f"'{metric}'")
    sql = f"SELECT {columns} FROM {rows}"
    cur = tiered.cursor()
    try:
        bound = cold_scan.bind(cur, sql)
        assert bound is not None and "wanka_tier_block" not in bound.sql.lower()
        got = _bag(cur, bound.sql)
        assert got == _bag(cur, sql)
    finally:
        cur.close()
