"""Writes keep their guarantees across compaction: a retried delivery is stored once, retention
drops whole blocks, UPDATE and DELETE of compacted samples are refused, a kill half-way loses
and doubles nothing, an old file migrates, TRUNCATE drops the blocks, and writes interleaved
with compactions do what they do to a plain table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.tsdb.compacted import (
    FAR,
    METRICS,
    PER_HOST,
    ROOT,
    SPECIAL_BITS,
    T0,
    count,
    double,
    grid,
    refresh_per_host,
    rows,
    table,
)
from tests.warehouse.tsdb.versions import engine_of_version
from tests.warehouses import Warehouses
from warehouse.dynamic import retention as checked
from warehouse.errors import UserError
from warehouse.kernel import catalog
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import compact, retention, tiers, write
from warehouse.tsdb.append import append


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


# -- 8. files of older versions (tests/warehouse/tsdb/versions.py) -------------------------


def test_a_version_20_file_migrates_in_place_and_compacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v20.duckdb"
    every = catalog.migrations()
    with monkeypatch.context() as patch, engine_of_version(patch, path, 20) as old:
        cur = old.cursor()
        append(cur, grid(5, hosts=2))
        append(cur, table([(T0, "h0", 0, METRICS[0], None, double(SPECIAL_BITS[2]))]))
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


def test_a_version_26_file_keeps_its_blocks_and_stores_them_uncompressed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step 27 copies both block tables into ones DuckDB must not compress again: every block,
    sample and tier row is read back the same, old blocks and new ones alike."""
    path = tmp_path / "v26.duckdb"
    every = catalog.migrations()
    blocks_sql = "SELECT count(*) FROM wanka.gpu_blocks"
    tiers_sql = "SELECT count(*) FROM wanka.tier_blocks"
    with monkeypatch.context() as patch, engine_of_version(patch, path, 26) as old:
        cur = old.cursor()
        append(cur, grid(5, hosts=2))
        tiers.fold(cur)
        compact.compact(cur, now=FAR)
        before = rows(cur)
        held = (count(cur, blocks_sql), count(cur, tiers_sql))
        hours = cur.sql("SELECT * FROM gpu_metrics_1h ORDER BY ALL").fetchall()
    assert held[0] > 0 and held[1] > 0
    with Engine(str(path)) as eng:
        assert eng.schema_version == max(m.version for m in every)
        cur = eng.cursor()
        assert (count(cur, blocks_sql), count(cur, tiers_sql)) == held
        assert rows(cur) == before
        assert cur.sql("SELECT * FROM gpu_metrics_1h ORDER BY ALL").fetchall() == hours
        for name in ("gpu_blocks", "tier_blocks"):
            found = cur.sql(
                f"SELECT DISTINCT compression FROM pragma_storage_info('wanka.{name}') "
                "WHERE column_name = 'data' AND compression <> 'Constant'"
            ).fetchall()
            assert found == [("Uncompressed",)], name
        append(cur, table([(T0 + timedelta(hours=9), "h0", 0, METRICS[0], None, 2.5)]))
        compact.compact(cur, now=FAR + timedelta(hours=12))
        assert count(cur, blocks_sql) == held[0] + 1


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
    refresh_per_host(cur)  # per_host equals its recompute: empty
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
