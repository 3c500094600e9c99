"""Compaction (warehouse/tsdb/compact.py): closed windows move into compressed blocks and
gpu_metrics gives the same rows, bit for bit; late samples, retries, retention, DML, a kill
half-way and an old file all keep that."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Draw, examples, invoke_wanka
from tests.warehouses import Warehouses
from warehouse.dynamic import retention as checked
from warehouse.errors import UserError
from warehouse.kernel import catalog
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import compact, retention, tiers, write
from warehouse.tsdb.append import append

ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 11, 1, tzinfo=UTC)
FAR = datetime(2100, 1, 1, tzinfo=UTC)  # every window of the tests is closed by then
COLUMNS = "ts, host, gpu, uuid, model, metric, value, labels, batch_id"
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "node_load1")
SPECIAL_BITS = (
    0x7FF8000000000000,  # NaN
    0xFFF8000000000001,  # negative NaN with a payload
    0x7FF0000000000002,  # Prometheus staleness marker (a signalling NaN)
    0x7FF0000000000000,  # +Inf
    0xFFF0000000000000,  # -Inf
    0x8000000000000000,  # -0.0
    0x0000000000000001,  # smallest subnormal
    0x800FFFFFFFFFFFFF,  # negative subnormal
)


def _double(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def rows(cur: duckdb.DuckDBPyConnection, where: str = "") -> Counter[tuple[Any, ...]]:
    """The multiset of gpu_metrics rows, values as their bits (NULL as None)."""
    table = cur.sql(f"SELECT {COLUMNS} FROM gpu_metrics {where}").to_arrow_table()
    value = table["value"]
    bits = np.asarray(value.fill_null(0).to_numpy(), dtype=np.float64).view(np.uint64)
    nulls = value.is_null().to_numpy(zero_copy_only=False)
    values = [None if n else int(b) for b, n in zip(bits, nulls, strict=True)]
    columns = [table[c].to_pylist() for c in COLUMNS.split(", ")]
    columns[6] = values
    return Counter(zip(*columns, strict=True))


def count(cur: duckdb.DuckDBPyConnection, sql: str) -> Any:
    return cur.execute(sql).fetchall()[0][0]


def table(samples: list[tuple[Any, ...]], batch: list[int | None] | None = None) -> pa.Table:
    """gpu_metrics rows of (ts, host, gpu, metric, labels, value) [, batch_id]."""
    columns: dict[str, Any] = {
        "ts": pa.array([s[0] for s in samples], pa.timestamp("us", tz="UTC")),
        "host": [s[1] for s in samples],
        "gpu": pa.array([s[2] for s in samples], pa.int32()),
        "uuid": [f"GPU-{s[1]}-{s[2]}" for s in samples],
        "metric": [s[3] for s in samples],
        "labels": pa.array([s[4] for s in samples], pa.string()),
        "value": pa.array([s[5] for s in samples], pa.float64()),
    }
    if batch is not None:
        columns["batch_id"] = pa.array(batch, pa.int64())
    return pa.table(columns)


def grid(hours: float, every_min: int = 10, hosts: int = 3, metrics: int = 2) -> pa.Table:
    """Samples every `every_min` minutes for `hours` from T0: each host, GPU 0, each metric."""
    steps = int(hours * 60 / every_min)
    return table(
        [
            (T0 + timedelta(minutes=k * every_min), f"h{h}", 0, METRICS[m], None, float(k + h + m))
            for k in range(steps)
            for h in range(hosts)
            for m in range(metrics)
        ]
    )


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


# -- 2. lossless ------------------------------------------------------------------------------

value = st.one_of(
    st.none(),
    st.sampled_from(SPECIAL_BITS).map(_double),
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.integers(0, 100).map(float),
)
moment = st.one_of(
    st.integers(0, 36).map(lambda k: T0 + timedelta(minutes=10 * k)),  # often the same time
    st.integers(0, 6 * 3600 * 10**6).map(lambda us: T0 + timedelta(microseconds=us)),
)
sample = st.tuples(
    moment,
    st.sampled_from(["h0", "h1", "h2"]),
    st.integers(0, 1),
    st.sampled_from(METRICS),
    st.sampled_from([None, '{"pod":"p","namespace":"ml"}']),
    value,
)


@st.composite
def deliveries(draw: Draw) -> list[tuple[list[tuple[Any, ...]], list[int | None] | None]]:
    """Samples in 1-3 appends, some given twice (the same series and time), each append with a
    batch of its own or with batch ids given (NULL among them)."""
    drawn = draw(st.lists(sample, min_size=1, max_size=60))
    again = draw(st.lists(st.sampled_from(drawn), max_size=5))
    drawn = drawn + again
    cuts = sorted(set(draw(st.lists(st.integers(1, len(drawn)), max_size=2))) | {len(drawn)})
    parts: list[tuple[list[tuple[Any, ...]], list[int | None] | None]] = []
    lo = 0
    for hi in cuts:
        piece = drawn[lo:hi]
        given_ids = draw(st.booleans())
        ids = (
            draw(
                st.lists(st.sampled_from([None, 5, 900]), min_size=len(piece), max_size=len(piece))
            )
            if given_ids
            else None
        )
        parts.append((piece, ids))
        lo = hi
    return parts


#: Each block's statistics, and the same over its decoded samples.
STATS = (
    "samples, value_count, value_sum, value_min, value_max, ts_min, ts_max, series_lo, "
    "series_hi, batch_lo, batch_hi"
)
DECODED = """
SELECT block_id, count(*), count(value), sum(value), min(value), max(value), min(ts), max(ts),
       min(series_id), max(series_id), min(batch_id), max(batch_id)
FROM (SELECT block_id, unnest(wanka_block(data, NULL, NULL, NULL, NULL, NULL), recursive := true)
      FROM wanka.gpu_blocks)
GROUP BY block_id ORDER BY block_id
"""


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (a sum or max over a NaN is NaN)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


@pytest.fixture(scope="module")
def shared(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouses.engine() as engine:
        cursor = engine.cursor()
        yield cursor
        cursor.close()


@settings(max_examples=examples(0.2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deliveries(), st.sampled_from([1, 3, 1000]))
def test_compaction_keeps_every_row_bit_for_bit_and_each_block_states_its_samples(
    shared: duckdb.DuckDBPyConnection,
    parts: list[tuple[list[tuple[Any, ...]], list[int | None] | None]],
    block_samples: int,
) -> None:
    cur = shared
    write.clear(cur, "gpu_metrics")
    for piece, ids in parts:
        append(cur, table(piece, ids))
    before = rows(cur)
    assert sum(before.values()) == sum(len(p) for p, _ in parts)
    done = compact.compact(cur, now=FAR, block_samples=block_samples)
    assert sum(d.samples for d in done) == sum(before.values())
    assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0
    assert rows(cur) == before
    assert compact.compact(cur, now=FAR) == []  # nothing left to do
    # a block holds one metric and one window; its statistics are its decoded samples'
    stored = cur.sql(
        f"SELECT block_id, {STATS}, metric, window_start FROM wanka.gpu_blocks ORDER BY block_id"
    ).fetchall()
    decoded = cur.sql(DECODED).fetchall()
    assert len(stored) == len(decoded) == sum(d.blocks for d in done)
    for mine, theirs in zip(stored, decoded, strict=True):
        assert all(_same(a, b) for a, b in zip(mine[:12], theirs, strict=True)), (mine, theirs)
    wrong = cur.sql(
        "SELECT b.block_id FROM (SELECT block_id, metric, window_start, unnest(wanka_block("
        "data, NULL, NULL, NULL, NULL, NULL), recursive := true) FROM wanka.gpu_blocks) b "
        "JOIN wanka.gpu_series r USING (series_id) WHERE r.metric <> b.metric "
        "OR time_bucket(INTERVAL 2 HOUR, b.ts, TIMESTAMPTZ 'epoch') <> b.window_start"
    ).fetchall()
    assert wrong == []


# -- 3. late samples, and the refreshes over them ---------------------------------------------

PER_HOST = (
    "CREATE DYNAMIC TABLE per_host WITH (freshness = '1 hour') AS "
    "SELECT host, count(*) AS n, sum(value) AS s FROM gpu_metrics GROUP BY host"
)


def _refresh(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    result: dict[str, Any] = (
        execute(cur, "REFRESH DYNAMIC TABLE per_host").read_all().to_pylist()[0]
    )
    held = sorted(cur.sql("SELECT host, n, s FROM per_host").fetchall())
    full = sorted(
        cur.sql("SELECT host, count(*), sum(value) FROM gpu_metrics GROUP BY host").fetchall()
    )
    assert held == full
    return result


def test_late_samples_become_another_block_and_compaction_alone_refreshes_nothing(
    eng: Engine,
) -> None:
    cur = eng.cursor()
    append(cur, grid(4))  # two windows, two metrics
    execute(cur, PER_HOST).read_all()
    changes = count(cur, "SELECT count(*) FROM wanka.table_changes")
    first = compact.compact(cur, now=FAR)
    assert count(cur, "SELECT count(*) FROM wanka.table_changes") == changes
    assert [(d.window, d.metric) for d in first] == [
        (T0 + timedelta(hours=h), m) for h in (0, 2) for m in METRICS[:2]
    ]
    assert _refresh(cur)["refresh_mode"] == "no_data"  # moving samples is no change
    # late samples of the first window (a new host, and more of a known one)
    late = table(
        [(T0 + timedelta(minutes=m, seconds=7), "h1", 0, METRICS[0], None, 0.5) for m in (3, 50)]
        + [(T0 + timedelta(minutes=61), "h9", 1, METRICS[1], None, 2.0)]
    )
    before = rows(cur)
    append(cur, late)
    assert not before - rows(cur)  # the compacted rows are all still there, and
    assert sum((rows(cur) - before).values()) == 3  # the late ones beside them
    result = _refresh(cur)
    assert result["refresh_mode"] == "incremental", result
    blocks_before = count(cur, "SELECT count(*) FROM wanka.gpu_blocks")
    with_late = rows(cur)
    changes = count(cur, "SELECT count(*) FROM wanka.table_changes")
    second = compact.compact(cur, now=FAR)
    assert [(d.window, d.metric, d.samples) for d in second] == [
        (T0, METRICS[0], 2),
        (T0, METRICS[1], 1),
    ]
    assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") == blocks_before + 2
    assert (
        count(cur, f"SELECT count(*) FROM wanka.gpu_blocks WHERE window_start = '{T0.isoformat()}'")
        == 4
    )  # the first pass's two, and one more per metric
    assert rows(cur) == with_late
    assert count(cur, "SELECT count(*) FROM wanka.table_changes") == changes
    result = _refresh(cur)
    assert result["refresh_mode"] == "no_data", result
    # a full refresh over blocks only gives the same rows
    execute(cur, "REFRESH DYNAMIC TABLE per_host FULL").read_all()
    _refresh(cur)


# -- 4. remote_write retried across a compaction ----------------------------------------------


def test_a_remote_write_retry_spanning_a_compaction_is_stored_once(eng: Engine) -> None:
    from tests.warehouse.remote_write.support import body
    from warehouse.ingest.models import ModelNames
    from warehouse.remote_write.decode import decode
    from warehouse.remote_write.rows import Limits, SeriesCache

    start = int(T0.timestamp()) * 1000
    now = T0 + timedelta(hours=6)  # remote_write takes samples of the last hours only
    series = [
        (
            [("__name__", metric), ("Hostname", f"n{h}"), ("UUID", f"GPU-{h}"), ("gpu", "0")],
            [(start + 60_000 * k, float(k % 7)) for k in range(0, 300, 3)],  # 5 h, 3 windows
        )
        for metric in METRICS[:2]
        for h in range(2)
    ]
    delivery = body(series)

    def decoded(data: bytes, cache: SeriesCache | None = None) -> Any:
        return decode(data, cache or SeriesCache(ModelNames({})), Limits(), now=now)

    cur = eng.cursor()
    first = append(cur, decoded(delivery), exactly_once=True)
    assert first.gpu == 4 * 100
    before = rows(cur)
    assert compact.compact(cur, now=FAR)
    assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0
    cache = SeriesCache(ModelNames({}))
    for _ in range(2):  # Prometheus retries what it did not see acknowledged
        again = append(cur, decoded(delivery, cache), exactly_once=True, cache=cache)
        assert again.gpu == 0 and again.duplicates == 4 * 100, again
        assert rows(cur) == before
    # the first ten samples again with five new ones between them: only the new ones land
    more = body(
        [
            (labels, sorted([*points[:10], *[(p + 30_000, 1.0) for p, _ in points[:5]]]))
            for labels, points in series
        ]
    )
    after = append(cur, decoded(more, cache), exactly_once=True, cache=cache)
    assert after.gpu == 4 * 5 and after.duplicates == 4 * 10, after
    assert sum(rows(cur).values()) == 4 * 105


# -- 5. retention drops whole blocks ----------------------------------------------------------


def test_retention_drops_blocks_wholly_older_and_never_part_of_one(eng: Engine) -> None:
    cur = eng.cursor()
    append(cur, grid(24, every_min=20, hosts=2))  # a day: twelve windows, two metrics
    compact.compact(cur, now=FAR, block_samples=1)  # a block per series: 2 per window and metric
    append(cur, grid(1, every_min=7, hosts=1))  # hot samples of the first window too
    blocks = cur.sql(
        "SELECT block_id, ts_min, ts_max, samples FROM wanka.gpu_blocks ORDER BY block_id"
    ).fetchall()
    assert len(blocks) == 12 * 2 * 2
    decoded = {
        b: n
        for b, n in cur.sql(
            "SELECT block_id, len(wanka_block(data, NULL, NULL, NULL, NULL, NULL)) "
            "FROM wanka.gpu_blocks"
        ).fetchall()
    }
    hot = count(cur, "SELECT count(*) FROM wanka.gpu_samples")
    checked.set_rule(cur, "gpu_metrics", "1 day")
    now = T0 + timedelta(days=1, hours=9, minutes=30)  # the edge is 09:30, in the 08:00 window
    [done] = retention.apply(cur, now)
    edge = now - timedelta(days=1)
    kept = cur.sql(
        "SELECT block_id, ts_min, ts_max, samples FROM wanka.gpu_blocks ORDER BY block_id"
    ).fetchall()
    assert kept == [b for b in blocks if b[2] >= edge]  # the rest stay as they were
    assert [b for b in kept if b[1] < edge], "the test means blocks across the edge"
    for block_id, n in cur.sql(
        "SELECT block_id, len(wanka_block(data, NULL, NULL, NULL, NULL, NULL)) "
        "FROM wanka.gpu_blocks"
    ).fetchall():
        assert decoded[block_id] == n  # no block lost part of its samples
    assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0  # all before the edge
    assert done.rows == hot + sum(b[3] for b in blocks if b[2] < edge)
    assert count(cur, "SELECT count(*) FROM gpu_metrics") == sum(b[3] for b in kept)
    assert count(cur, "SELECT min(ts) FROM gpu_metrics") == T0 + timedelta(hours=8)


# -- 6. UPDATE and DELETE of compacted samples ------------------------------------------------


def test_update_and_delete_of_compacted_samples_are_refused_and_change_nothing(
    eng: Engine,
) -> None:
    cur = eng.cursor()
    append(cur, grid(2))
    compact.compact(cur, now=FAR)
    append(cur, table([(T0 + timedelta(hours=3), "h0", 0, METRICS[0], None, 1.0)] * 2))
    before = rows(cur)
    blocks = cur.sql("SELECT * FROM wanka.gpu_blocks ORDER BY block_id").fetchall()
    for sql in (
        "DELETE FROM gpu_metrics WHERE host = 'h1'",
        "DELETE FROM gpu_metrics",
        "UPDATE gpu_metrics SET value = value + 1 WHERE metric = 'DCGM_FI_DEV_GPU_UTIL'",
        "UPDATE gpu_metrics AS g SET ts = g.ts + INTERVAL 1 MINUTE WHERE g.value > 5",
    ):
        with pytest.raises(UserError, match=r"would change \d+ samples of closed windows"):
            execute(cur, sql).read_all()
        assert rows(cur) == before, sql
        assert cur.sql("SELECT * FROM wanka.gpu_blocks ORDER BY block_id").fetchall() == blocks
    # statements that touch only hot samples work
    hot = "ts >= TIMESTAMPTZ '2026-11-01 03:00:00+00'"
    done = execute(cur, f"UPDATE gpu_metrics SET value = 41 WHERE {hot}").read_all()
    assert done["Count"].to_pylist() == [2]
    assert count(cur, "SELECT count(*) FROM gpu_metrics WHERE value = 41") == 2
    done = execute(cur, f"DELETE FROM gpu_metrics WHERE {hot}").read_all()
    assert done["Count"].to_pylist() == [2]
    assert sum(rows(cur).values()) == sum(before.values()) - 2
    assert cur.sql("SELECT * FROM wanka.gpu_blocks ORDER BY block_id").fetchall() == blocks


# -- 7. killed half-way -----------------------------------------------------------------------

KILLED = """
import sys, time
from datetime import UTC, datetime
from warehouse.kernel import blocks
from warehouse.kernel.engine import Engine
from warehouse.tsdb import compact

encode = blocks.encode
calls = []
def slow(samples):
    calls.append(1)
    if len(calls) == int(sys.argv[2]):
        print("encoding", flush=True)
        time.sleep(600)
    return encode(samples)
blocks.encode = slow
with Engine(sys.argv[1]) as eng:
    compact.compact(eng.cursor(), now=datetime(2100, 1, 1, tzinfo=UTC), block_samples=1)
print("finished", flush=True)
"""


def test_a_compaction_killed_half_way_loses_and_doubles_nothing(
    warehouses: Warehouses, tmp_path: Path
) -> None:
    path = warehouses.empty(tmp_path / "w.duckdb")
    with Engine(str(path)) as eng:
        append(eng.cursor(), grid(2, hosts=3))  # one window, two metrics, three series each
        before = rows(eng.cursor())
    # the first metric's three blocks commit; the kill comes in the second's second block
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(path), "5"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "encoding"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with Engine(str(path)) as eng:
        cur = eng.cursor()
        assert rows(cur) == before
        assert cur.sql("SELECT DISTINCT metric FROM wanka.gpu_blocks").fetchall() == [(METRICS[0],)]
        hot = cur.sql(
            "SELECT r.metric, count(*) FROM wanka.gpu_samples s JOIN wanka.gpu_series r "
            "USING (series_id) GROUP BY ALL"
        ).fetchall()
        assert hot == [(METRICS[1], sum(before.values()) // 2)]  # the window is hot still
        again = compact.compact(cur, now=FAR, block_samples=1)
        assert [(d.metric, d.blocks) for d in again] == [(METRICS[1], 3)]
        assert rows(cur) == before
        assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0
        assert count(cur, "SELECT sum(samples) FROM wanka.gpu_blocks") == sum(before.values())


# -- 8. a file of version 20 ------------------------------------------------------------------


def test_a_version_20_file_migrates_in_place_and_compacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v20.duckdb"
    every = catalog.migrations()
    with monkeypatch.context() as patch:
        patch.setattr(catalog, "migrations", lambda folder=None: tuple(
            m for m in every if m.version <= 20))  # fmt: skip
        with Engine(str(path)) as old:
            assert old.schema_version == 20
            cur = old.cursor()
            append(cur, grid(5, hosts=2))
            append(cur, table([(T0, "h0", 0, METRICS[0], None, _double(SPECIAL_BITS[2]))]))
            tables = cur.sql("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'wanka'")
            assert ("gpu_blocks",) not in tables.fetchall()
            before = rows(cur)
    with Engine(str(path)) as eng:
        assert eng.schema_version == max(m.version for m in every)
        cur = eng.cursor()
        assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") == 0
        assert rows(cur) == before
        done = compact.compact(cur, now=FAR)
        assert len(done) == 3 * 2 and sum(d.samples for d in done) == sum(before.values())
        assert rows(cur) == before
    with Engine(str(path)) as eng:  # and again, opened afresh
        assert rows(eng.cursor()) == before


def test_truncate_drops_the_blocks_too_and_the_refresh_sees_it(eng: Engine) -> None:
    """TRUNCATE counts, and logs as a change, the compressed samples it drops as well as the
    hot ones: a dynamic table over gpu_metrics is empty after it, however the rows were held."""
    cur = eng.cursor()
    append(cur, grid(4))
    execute(cur, PER_HOST).read_all()
    tiers.fold(cur)
    compact.compact(cur, now=FAR)
    append(cur, table([(T0 + timedelta(hours=5), "h0", 0, METRICS[0], None, 1.0)]))
    held = count(cur, "SELECT count(*) FROM gpu_metrics")
    done = execute(cur, "TRUNCATE gpu_metrics").read_all()
    assert done["Count"].to_pylist() == [held]
    assert count(cur, "SELECT count(*) FROM gpu_metrics") == 0
    assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") == 0
    _refresh(cur)  # per_host equals its recompute: empty
    assert count(cur, "SELECT count(*) FROM per_host") == 0
    tiers.fold(cur)
    for tier in tiers.RECOMPUTE:
        assert count(cur, f"SELECT count(*) FROM {tier}") == 0, tier


# -- DML and compaction interleaved, against a plain table ------------------------------------

PLAIN = """CREATE OR REPLACE TABLE plain (ts TIMESTAMPTZ NOT NULL, host VARCHAR NOT NULL,
    gpu INTEGER, uuid VARCHAR, model VARCHAR, metric VARCHAR NOT NULL, value DOUBLE,
    labels JSON, batch_id BIGINT, compacted BOOLEAN DEFAULT false)"""
SEED = (
    "INSERT INTO {t} (ts, host, gpu, metric, value, labels) "
    "SELECT TIMESTAMPTZ '2026-11-01' + to_minutes(i * 7), 'h' || i % 3, (i // 3) % 2, "
    "'M' || (i // 6) % 2, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 13 END, "
    """CASE WHEN i % 4 = 0 THEN '{{"pod":"p"}}' END FROM range(60) t(i)"""
)
#: (verb, SET, WHERE) of the UPDATEs and DELETEs; a, b are drawn.
CHANGES = [
    ("DELETE", "", "value > {a} AND host = 'h{b}'"),
    ("DELETE", "", "metric = 'M{b}' OR value IS NULL"),
    ("DELETE", "", "ts >= TIMESTAMPTZ '2026-11-01 00:00:00+00' + INTERVAL {a} HOUR"),
    ("UPDATE", "value = value + {a}", "host <> 'h{b}'"),
    ("UPDATE", "ts = ts + INTERVAL 1 MINUTE", "labels IS NULL AND value > {b} + 3"),
    ("UPDATE", "value = -value", "ts > TIMESTAMPTZ '2026-11-01 04:00:00+00' + to_minutes({a})"),
]
INSERT = (
    "INSERT INTO {t} (ts, host, gpu, metric, value) VALUES "
    "(TIMESTAMPTZ '2026-11-01 00:00:00+00' + INTERVAL {a} HOUR + INTERVAL 13 SECOND, "
    "'h{b}', 0, 'M{b}', {a}.5)"
)
STEP = st.tuples(st.sampled_from(["change", "insert", "compact", "truncate"]), st.integers(0, 5))


@settings(max_examples=examples(0.3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(STEP, st.integers(0, len(CHANGES) - 1), st.integers(0, 2)), max_size=12))
def test_writes_and_compactions_interleaved_do_what_they_do_to_a_plain_table(
    shared: duckdb.DuckDBPyConnection, steps: list[tuple[tuple[str, int], int, int]]
) -> None:
    """A statement that would change a compacted sample is refused and changes nothing; any
    other does to gpu_metrics what it does to a plain table, however many windows are cold."""
    cur = shared
    write.clear(cur, "gpu_metrics")
    cur.execute(PLAIN)
    for t in ("gpu_metrics", "plain"):
        execute(cur, SEED.format(t=t)).read_all()
    for (kind, a), which, b in steps:
        if kind == "compact":
            now = T0 + timedelta(hours=a + 1)
            compact.compact(cur, now=now)
            before = compact.closed_before(now)
            cur.execute("UPDATE plain SET compacted = true WHERE ts < ?", [before])
            continue
        if kind == "truncate":
            done = execute(cur, "TRUNCATE gpu_metrics").read_all()["Count"].to_pylist()
            assert done == [count(cur, "SELECT count(*) FROM plain")]
            cur.execute("DELETE FROM plain")
            continue
        if kind == "insert":
            execute(cur, INSERT.format(t="gpu_metrics", a=a, b=b)).read_all()
            cur.execute(INSERT.format(t="plain", a=a, b=b))
            continue
        verb, sets, where = CHANGES[which]
        where = where.format(a=a, b=b)
        sets = sets.format(a=a)
        sql = f"{verb} FROM gpu_metrics WHERE {where}"
        if verb == "UPDATE":
            sql = f"UPDATE gpu_metrics SET {sets} WHERE {where}"
        touches = count(cur, f"SELECT count(*) FROM plain WHERE compacted AND ({where})")
        if touches:
            held = rows(cur)
            with pytest.raises(UserError, match=f"would change {touches} samples of closed"):
                execute(cur, sql).read_all()
            assert rows(cur) == held, sql
            continue
        ours = execute(cur, sql).read_all()["Count"].to_pylist()
        theirs = cur.execute(sql.replace("gpu_metrics", "plain")).fetchall()[0][0]
        assert ours == [theirs], sql
    strip = "ts, host, gpu, metric, value, labels"  # batch ids differ
    mine = sorted(cur.sql(f"SELECT {strip} FROM gpu_metrics").fetchall(), key=repr)
    plain = sorted(cur.sql(f"SELECT {strip} FROM plain").fetchall(), key=repr)
    assert mine == plain
    cold = count(cur, "SELECT coalesce(sum(samples), 0) FROM wanka.gpu_blocks")
    assert cold == count(cur, "SELECT count(*) FROM plain WHERE compacted")


def test_a_refresh_and_a_fold_behind_a_compaction_find_their_batches_in_the_blocks(
    eng: Engine,
) -> None:
    """Samples appended and compacted before the next refresh or fold are read from the blocks:
    the dynamic table and the tiers equal their recomputes, incrementally."""
    cur = eng.cursor()
    append(cur, grid(2))
    execute(cur, PER_HOST).read_all()
    tiers.fold(cur)
    for hours in (2, 4):  # the next windows, each compacted before anything reads it
        later = grid(2)
        later = later.set_column(0, "ts", pa.compute.add(later["ts"], pa.scalar(
            timedelta(hours=hours), pa.duration("us"))))  # fmt: skip
        append(cur, later)
        compact.compact(cur, now=FAR, block_samples=2)
        assert count(cur, "SELECT count(*) FROM wanka.gpu_samples") == 0
        result = _refresh(cur)
        assert result["refresh_mode"] == "incremental", result
        tiers.fold(cur)
        for tier, recompute in tiers.RECOMPUTE.items():
            held = sorted(cur.sql(f"SELECT * FROM {tier}").fetchall(), key=repr)
            assert held == sorted(cur.sql(recompute).fetchall(), key=repr), tier


def test_wanka_compact_moves_closed_windows_and_says_what_it_moved(cli_db: Path) -> None:
    old = grid(2)
    old = old.set_column(0, "ts", pa.array([datetime(2020, 1, 1, tzinfo=UTC)] * len(old),
                                           pa.timestamp("us", tz="UTC")))  # fmt: skip
    with Engine(str(cli_db)) as eng:
        append(eng.cursor(), old)
        before = rows(eng.cursor())
    done = invoke_wanka("--db", str(cli_db), "compact")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("2020-01-01 00:00 DCGM_FI_DEV_GPU_UTIL: 36 samples in 1 blocks")
    assert lines[-1].startswith("compacted 72 samples of 2 window-metrics")
    with Engine(str(cli_db)) as eng:
        assert rows(eng.cursor()) == before
        assert count(eng.cursor(), "SELECT count(*) FROM wanka.gpu_samples") == 0


def test_a_query_decoding_blocks_can_be_cancelled(eng: Engine) -> None:
    """The decoder runs a chunk of blocks at a time: an interrupt (what the serve watchdog's
    time limit and a client's cancel send) stops a query that decodes block after block."""
    cur = eng.cursor()
    append(cur, grid(6, every_min=1, hosts=8))
    compact.compact(cur, now=T0 + timedelta(days=1))
    assert count(cur, "SELECT count(*) FROM wanka.gpu_blocks") > 0
    endless = (
        "SELECT sum(len(wanka_block(data, NULL, NULL, NULL, NULL, NULL))) "
        "FROM wanka.gpu_blocks, range(100000000)"
    )
    failed: list[BaseException] = []

    def run() -> None:
        try:
            cur.execute(endless).fetchall()
        except BaseException as error:  # the thread hands it to the test
            failed.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.5)
    assert worker.is_alive()  # still decoding
    cur.interrupt()
    worker.join(10)
    assert not worker.is_alive()
    assert failed and isinstance(failed[0], duckdb.InterruptException)
    cur.close()
