"""Group commit: concurrent remote_write requests share transactions, each answered after its
own commit; a request that cannot be stored fails alone."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.serve.remote_write import GroupCommit
from tests.warehouse.remote_write.support import body, dcgm_labels
from tests.warehouses import Warehouses
from warehouse.ingest.batch import read_context
from warehouse.ingest.models import ModelNames
from warehouse.kernel.engine import Engine
from warehouse.remote_write.decode import decode
from warehouse.remote_write.rows import Decoded, Limits, SeriesCache
from warehouse.tsdb.append import Appended, append

NOW = int(time.time() * 1000)


def requests(eng: Engine, count: int, metric: str = "DCGM_FI_DEV_GPU_UTIL") -> list[Decoded]:
    cache = SeriesCache(ModelNames(read_context(eng).model_names))
    return [
        decode(
            body([(dcgm_labels(h, 0, metric), [(NOW + k * 1000, float(k))]) for h in range(50)]),
            cache,
            Limits(),
        )
        for k in range(count)
    ]


def slow_group(
    eng: Engine, monkeypatch: pytest.MonkeyPatch, *, steady_s: float, takes_s: float
) -> tuple[GroupCommit, list[float]]:
    """A group commit whose transactions take `takes_s` each, lingering 1 s at most, a stream
    being transactions less than `steady_s` apart; when each transaction began."""
    from service.serve import remote_write

    monkeypatch.setattr(remote_write, "STEADY_S", steady_s)
    monkeypatch.setattr(remote_write, "MAX_LINGER_S", 1.0)
    began: list[float] = []

    def write(rows: Decoded) -> Appended:
        began.append(time.monotonic())
        time.sleep(takes_s)
        return append(eng.cursor(), rows)

    return GroupCommit(write), began


def test_concurrent_requests_are_stored_once_each(warehouses: Warehouses) -> None:
    with warehouses.engine() as eng:
        transactions: list[int] = []

        def write(rows: Decoded) -> Appended:
            transactions.append(rows.requests)
            return append(eng.cursor(), rows)

        group = GroupCommit(write)
        sent = requests(eng, 40)
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda r: group.submit(r).result(timeout=60), sent + sent))
        group.close()
        assert all(isinstance(a, Appended) for a in answers)
        assert eng.con.execute("SELECT count(*) FROM gpu_metrics").fetchall() == [(40 * 50,)]
        assert sum(transactions) == 80  # every request stored in some transaction
        assert len(transactions) < 80  # and some shared one


def test_a_request_that_cannot_be_stored_fails_alone(warehouses: Warehouses) -> None:
    with warehouses.engine() as eng:
        sent = requests(eng, 6)
        poisoned = requests(eng, 1, "DCGM_POISON")[0]
        sent.insert(3, poisoned)

        def write(rows: Decoded) -> Appended:
            if "DCGM_POISON" in rows.series["metric"].to_pylist():
                raise RuntimeError("disk full")  # any transaction holding the poisoned one fails
            return append(eng.cursor(), rows)

        group = GroupCommit(write)
        futures = [group.submit(rows) for rows in sent]
        for rows, done in zip(sent, futures, strict=True):
            if rows is poisoned:
                with pytest.raises(RuntimeError, match="disk full"):
                    done.result(timeout=60)
            else:
                assert isinstance(done.result(timeout=60), Appended)
        group.close()
        assert eng.con.execute("SELECT count(*) FROM gpu_metrics").fetchall() == [(6 * 50,)]


def test_the_first_requests_arriving_together_all_store(
    tmp_path: object, warehouses: Warehouses
) -> None:
    """A fresh server's first requests come one per Prometheus shard at once: the series cache
    and the group commit are set up once, and every request is stored (was: 500s)."""
    from pathlib import Path

    from service.serve.server import Server
    from warehouse.security.users import User

    path = warehouses.empty(Path(str(tmp_path)) / "first.duckdb", shipped=True)
    with Server(str(path)) as server:
        writer = User("prom", "writer")
        bodies = [
            body([(dcgm_labels(h, g, "DCGM_FI_DEV_GPU_UTIL"), [(NOW, 1.0)]) for g in range(8)])
            for h in range(16)
        ]
        with ThreadPoolExecutor(16) as pool:
            stored = list(pool.map(lambda b: server.remote_write(writer, b), bodies))
        assert len(stored) == 16
        cur = server.engine.cursor()
        assert cur.execute("SELECT count(*) FROM gpu_metrics").fetchall() == [(128,)]
        cur.close()


def test_a_steady_stream_lingers_and_a_lone_request_does_not(
    warehouses: Warehouses, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after a transaction, the writer waits as long as it took (capped) for the group
    to fill; a request after a quiet spell is stored at once."""
    with warehouses.engine() as eng:
        # a slow transaction: the next linger is as long (its cap)
        group, began = slow_group(eng, monkeypatch, steady_s=0.3, takes_s=1.0)
        first, second, third = requests(eng, 3)
        group.submit(first).result(timeout=60)
        sent = time.monotonic()
        group.submit(second).result(timeout=60)  # a stream: waits ~1 s before its store
        assert began[1] - sent >= 0.8
        time.sleep(0.6)  # quiet for longer than STEADY_S
        sent = time.monotonic()
        group.submit(third).result(timeout=60)
        assert began[2] - sent < 0.5
        group.close()


def test_the_linger_ends_once_every_sender_of_the_last_group_is_back(
    warehouses: Warehouses, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sender sends again only once answered: when every sender of the last group has a
    request queued, nothing more can come, and the group is stored without lingering. A
    sender that did not come back (or an unknown one) leaves the linger as it was."""
    with warehouses.engine() as eng:
        # the linger after a transaction: min(1.0, 3 x 0.5)
        group, began = slow_group(eng, monkeypatch, steady_s=5.0, takes_s=0.5)
        first, second, third, fourth = requests(eng, 4)
        group.submit(first, ("10.0.0.1", 40001)).result(timeout=60)
        sent = time.monotonic()
        group.submit(second, ("10.0.0.1", 40001)).result(timeout=60)  # back: no linger
        assert began[1] - sent < 0.4
        sent = time.monotonic()
        group.submit(third, ("10.0.0.2", 40002)).result(timeout=60)  # the first is not back
        assert began[2] - sent >= 0.8
        sent = time.monotonic()
        group.submit(fourth).result(timeout=60)  # an unknown sender: the linger runs
        assert began[3] - sent >= 0.8
        group.close()
