"""GPU events kept at ingest (warehouse/tsdb/events.py): the rules on a known sequence, the same
events whether the samples came in one batch or many (incremental == full), through either
telemetry path, stored once when a remote_write delivery is retried, equal to a plain Python
reading of the rules."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.tsdb.versions import engine_of_version
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.tsdb.append import append
from warehouse.tsdb.events import LOOKBACK_S, REPEAT_GAP_S

T0 = datetime(2026, 12, 1, tzinfo=UTC)
XID, SBE, DBE = (
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
)
THROTTLE, FAIL = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_ROW_REMAP_FAILURE"
Row = tuple[datetime, str, int, str, str, float]


@pytest.fixture
def cur(warehouses: Warehouses) -> Iterator[Any]:
    with warehouses.engine() as eng:
        cursor = eng.cursor()
        yield cursor
        cursor.close()


def table(rows: list[Row]) -> pa.Table:
    names = ["ts", "host", "gpu", "uuid", "metric", "value"]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


def events(cur: Any, silent: bool = False) -> list[tuple[Any, ...]]:
    """The stored events, without the 'silent' ones unless asked (samples far apart in time
    are the point of some tests here, not silence)."""
    where = "" if silent else "WHERE kind <> 'silent'"
    return [tuple(r) for r in cur.execute(
        f"SELECT ts, host, gpu, kind, code, detail FROM gpu_events {where} ORDER BY ALL"
    ).fetchall()]  # fmt: skip


def test_the_rules_on_one_gpu(cur: Any) -> None:
    rows: list[Row] = []
    for k in range(12):
        ts = T0 + timedelta(minutes=k)
        rows.append((ts, "n1", 0, "GPU-a", XID, 79.0 if 5 <= k < 8 else 0.0))
        rows.append((ts, "n1", 0, "GPU-a", SBE, float(k // 4)))
        rows.append((ts, "n1", 0, "GPU-a", THROTTLE, 64.0 if k in (3, 4) else 4.0 if k == 9 else 0))
        rows.append((ts, "n1", 0, "GPU-a", FAIL, 1.0 if k >= 10 else 0.0))
    append(cur, table(rows))
    found = [(ts.minute, kind, code, detail) for ts, _, _, kind, code, detail in events(cur)]
    assert found == [
        (3, "thermal_throttle", None, "clock event reasons 0x40"),
        (4, "ecc_sbe", None, "+1 (1 in all)"),
        (5, "xid", 79, "GPU has fallen off the bus"),
        (8, "ecc_sbe", None, "+1 (2 in all)"),
        (9, "power_throttle", None, "clock event reasons 0x4"),
        (10, "row_remap_failure", None, "row remapping failed"),
    ]


def reference(rows: list[Row]) -> list[tuple[Any, ...]]:
    """The rules read plainly: per GPU and field, each sample against the one before."""
    found: list[tuple[datetime, str, int, str, int | None]] = []
    last: dict[tuple[str, int, str], tuple[datetime, float]] = {}
    for ts, host, gpu, _, metric, value in sorted(rows, key=lambda r: (r[1], r[2], r[4], r[0])):
        before = last.get((host, gpu, metric))
        last[(host, gpu, metric)] = (ts, value)
        if before is not None and (ts - before[0]).total_seconds() > LOOKBACK_S:
            before = None
        if (
            metric == XID
            and value > 0
            and (
                before is None
                or before[1] != value
                or (ts - before[0]).total_seconds() > REPEAT_GAP_S
            )
        ):
            found.append((ts, host, gpu, "xid", int(value)))
        elif metric in (SBE, DBE) and before is not None and value > before[1]:
            found.append((ts, host, gpu, "ecc_sbe" if metric == SBE else "ecc_dbe", None))
    return sorted(found, key=str)


samples = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 1), st.sampled_from([XID, SBE, DBE]),
              st.sampled_from([0.0, 0.0, 13.0, 48.0, 79.0, 1.0, 2.0, 5.0])),
    min_size=1, max_size=60, unique_by=lambda s: (s[0], s[1], s[2]),
)  # fmt: skip


@pytest.fixture(scope="module")
def shared(warehouses: Warehouses) -> Iterator[Any]:
    with warehouses.engine() as eng:
        cursor = eng.cursor()
        yield cursor
        cursor.close()


@settings(max_examples=examples(0.4), deadline=None)
@given(samples, st.lists(st.integers(1, 59), max_size=4))
def test_batches_give_the_events_one_batch_gives(
    shared: Any, drawn: list[tuple[int, int, str, float]], cuts: list[int]
) -> None:
    rows = [(T0 + timedelta(minutes=35 * m), "n1", g, f"GPU-{g}", f, v) for m, g, f, v in drawn]
    rows.sort(key=lambda r: r[0])
    expected = reference(rows)
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    for pieces in ([(0, len(rows))], list(itertools.pairwise(bounds))):
        shared.execute("BEGIN")  # each try starts from an empty warehouse
        try:
            for lo, hi in pieces:
                append(shared, table(rows[lo:hi]))
            got = sorted(((ts, h, g, k, c) for ts, h, g, k, c, _ in events(shared)), key=str)
        finally:
            shared.execute("ROLLBACK")
        assert got == expected, pieces


def test_remote_write_stores_them_once_when_a_delivery_is_retried(cur: Any) -> None:
    from tests.warehouse.remote_write.support import body
    from warehouse.ingest.models import ModelNames
    from warehouse.remote_write.decode import decode
    from warehouse.remote_write.rows import Limits, SeriesCache
    from warehouse.tsdb.append import append

    labels = [("__name__", XID), ("Hostname", "n1"), ("UUID", "GPU-a"), ("gpu", "0")]
    now = int(datetime.now(UTC).timestamp()) * 1000
    points = [(now - 300_000 + 60_000 * k, 0.0 if k < 2 else 94.0) for k in range(5)]
    delivery = body([(labels, points)])
    cache = SeriesCache(ModelNames({}))
    for _ in range(2):  # Prometheus retries what it did not see acknowledged
        append(cur, decode(delivery, cache, Limits()), cache=cache)
    assert [(kind, code) for *_, kind, code, _ in events(cur)] == [("xid", 94)]


def test_a_copy_per_job_at_the_same_time_is_one_event(cur: Any) -> None:
    """A GPU shared by two jobs sends each sample once per job (two series, one time): in one
    batch or two, the XID they both show is one event."""
    ts = T0 + timedelta(minutes=1)
    first = table([(ts, "n1", 0, "GPU-a", XID, 79.0)]).append_column(
        "labels", pa.array(['{"hpc_job":"1"}'])
    )
    second = table([(ts, "n1", 0, "GPU-a", XID, 79.0)]).append_column(
        "labels", pa.array(['{"hpc_job":"2"}'])
    )
    append(cur, first)
    append(cur, second)
    assert [(kind, code) for *_, kind, code, _ in events(cur)] == [("xid", 79)]


def test_an_ingest_in_many_chunks_notes_each_event_once(
    warehouses: Warehouses, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wanka ingest` stores a file chunk by chunk in one batch: the events are noted once the
    batch is whole, not again with every chunk."""
    from warehouse.ingest import dcgm, ingest_stream

    monkeypatch.setattr(dcgm, "BLOCK_BYTES", 4_000)  # a block is a chunk: some 50 lines
    lines = []
    for k in range(400):
        ts = int((T0 + timedelta(minutes=k)).timestamp() * 1000)
        xid = 79 if k in (100, 300) else 0
        lines.append(f'DCGM_FI_DEV_XID_ERRORS{{gpu="0",UUID="GPU-a",Hostname="n1"}} {xid} {ts}')
    text = "\n".join(lines) + "\n"
    with Engine(str(warehouses.empty(tmp_path / "w.duckdb"))) as eng:
        ingest_stream(eng, "dcgm", io.BytesIO(text.encode()), name="x.prom")
        assert eng.cursor().execute(
            "SELECT count(DISTINCT batch_id) FROM gpu_events"
        ).fetchone() == (1,)
        cur = eng.cursor()
        assert [(ts.minute, kind, code) for ts, _, _, kind, code, _ in events(cur)] == [
            (40, "xid", 79), (0, "xid", 79)]  # fmt: skip
        cur.close()


def fleet(minutes: int, quiet: dict[tuple[str, int], range]) -> list[Row]:
    """XID samples every minute from n1 (GPUs 0, 1) and n2 (GPU 0), none while `quiet` says."""
    rows: list[Row] = []
    for k in range(minutes):
        for host, gpu in (("n1", 0), ("n1", 1), ("n2", 0)):
            if k not in quiet.get((host, gpu), range(0)):
                ts = T0 + timedelta(minutes=k, seconds=gpu)
                rows.append((ts, host, gpu, f"GPU-{host}-{gpu}", XID, 0.0))
    return sorted(rows, key=lambda r: r[0])


SILENT = [  # n1 GPU 1 quiet after 00:05 (back at 00:16); all of n2 quiet after 00:20
    (T0 + timedelta(minutes=10, seconds=1), "n1", 1, "silent", None,
     "GPU fell silent: no samples after 2026-12-01 00:05:01 while its host reported"),
    (T0 + timedelta(minutes=25), "n2", 0, "silent", None,
     "host fell silent: no GPU of n2 reported after 2026-12-01 00:20:00"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("batching", "n2_silent_s"),
    [("one batch", 9 * 60 + 1), ("a batch a minute", 8 * 60 + 1), ("a batch a GPU", 8 * 60)],
)
def test_a_gpu_or_host_that_falls_silent_is_one_event(
    cur: Any, batching: str, n2_silent_s: int
) -> None:
    """However the samples come in batches, the same silences. In "a batch a GPU" (n2's
    first each minute, as a remote_write request carries some GPUs) the batch that sees n1's
    GPU 1 fall silent holds neither it nor its host's other GPU, which reported just before."""
    rows = fleet(30, {("n1", 1): range(6, 16), ("n2", 0): range(21, 30)})
    per_minute: dict[str, list[tuple[str, int] | None]] = {  # None: the whole minute
        "one batch": [],
        "a batch a minute": [None],
        "a batch a GPU": [("n2", 0), ("n1", 0), ("n1", 1)],
    }
    gpus = per_minute[batching]
    batches = [
        [r for r in rows if r[0].minute == m and gpu in (None, r[1:3])]
        for m in range(30)
        for gpu in gpus
    ] or [rows]
    for batch in batches:
        if batch:
            append(cur, table(batch))
    assert events(cur, silent=True) == SILENT
    append(cur, table(rows))  # the same samples again: nothing new
    assert events(cur, silent=True) == SILENT
    (value,) = cur.execute("SELECT value FROM gpu_events WHERE host = 'n2'").fetchone()
    # silent from 00:20:00 to the newest sample the batch that saw it held: 00:29:01 when one
    # batch held it all, 00:28:01 (silent 7.5 minutes, to be sure) when the batches came a minute
    # at a time, 00:28:00 when they came a GPU at a time (n1's GPU 0's batch saw it)
    assert value == n2_silent_s


def test_no_silence_while_nobody_reports_or_the_node_is_down(cur: Any) -> None:
    """A gap in everybody's samples is the collection's outage, not a GPU's; a node the
    scheduler has down says why it is quiet."""
    cur.execute("INSERT INTO nodes (host, state) VALUES ('n2', 'down')")
    everybody = {(h, g): range(8, 20) for h, g in (("n1", 0), ("n1", 1))}
    append(cur, table(fleet(30, {**everybody, ("n2", 0): range(5, 30)})))
    assert events(cur, silent=True) == []


def test_a_nan_sample_is_no_event_and_no_error(cur: Any) -> None:
    """dcgm-exporter and Prometheus can send NaN; in DuckDB NaN = NaN is true, so it is read
    with isnan (a NaN XID once failed the whole ingest casting NaN to an XID code)."""
    rows: list[Row] = []
    for k in range(6):
        ts = T0 + timedelta(minutes=k)
        rows.append((ts, "n1", 0, "GPU-a", XID, float("nan") if k == 3 else 0.0))
        rows.append((ts, "n1", 0, "GPU-a", SBE, float("nan") if k == 3 else 1.0))
    append(cur, table(rows))
    assert events(cur, silent=True) == []


def test_a_version_27_file_loses_the_state_key_and_moves_the_state_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step 28 drops gpu_event_state's PRIMARY KEY (its ART index was 10× the rows on disk).
    The state written before is kept, and an ingest after the step finds its events against
    it and leaves one row per GPU and field."""
    path = tmp_path / "v27.duckdb"
    first = [(T0 + timedelta(minutes=k), "n1", g, f"GPU-{g}", XID, 0.0) for k in range(3)
             for g in range(2)]  # fmt: skip
    with monkeypatch.context() as patch, engine_of_version(patch, path, 27) as old:
        append(old.cursor(), table(first))
        keyed = old.con.sql(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'gpu_event_state' "
            "AND constraint_type = 'PRIMARY KEY'"
        ).fetchall()
        assert keyed == [(1,)]
    with Engine(str(path)) as eng:
        cur = eng.cursor()
        assert cur.sql(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'gpu_event_state' "
            "AND constraint_type = 'PRIMARY KEY'"
        ).fetchall() == [(0,)]
        state = "SELECT host, gpu, metric, ts, value FROM wanka.gpu_event_state ORDER BY ALL"
        assert cur.sql(state).fetchall() == [
            ("n1", g, XID, T0 + timedelta(minutes=2), 0.0) for g in range(2)
        ]
        later = T0 + timedelta(minutes=3)
        append(
            cur, table([(later, "n1", 1, "GPU-1", XID, 79.0), (later, "n1", 2, "GPU-2", XID, 0.0)])
        )
        assert cur.sql(state).fetchall() == [
            ("n1", 0, XID, T0 + timedelta(minutes=2), 0.0),
            ("n1", 1, XID, later, 79.0),
            ("n1", 2, XID, later, 0.0),
        ]
        assert [(g, kind, code) for _, _, g, kind, code, _ in events(cur)] == [(1, "xid", 79)]
