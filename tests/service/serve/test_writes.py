"""Writes and refreshes take turns in the serve process (service/serve/writes.py).

The race this prevents: a write takes its batch id when it starts; if it commits after a
refresh that moved the watermark past that id, no incremental refresh would ever see its rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from service.serve.server import Limits, Server
from service.serve.writes import WriterBusy
from tests.warehouses import Warehouses
from warehouse.dynamic.history import RefreshResult
from warehouse.security.users import User

ADMIN = User("admin", "admin")
ROLLUP = (
    "CREATE DYNAMIC TABLE per_host WITH (freshness = '1 minute') AS "
    "SELECT host, sum(value) AS s, count(*) AS n FROM gpu_metrics GROUP BY ALL"
)
INSERT = (
    "INSERT INTO gpu_metrics (ts, host, metric, value) "
    "SELECT TIMESTAMPTZ '2026-11-01' + to_minutes(i), 'h' || (i % 3), 'U', i FROM range(?) t(i)"
)


@pytest.fixture
def server(warehouses: Warehouses) -> Iterator[Server]:
    limits = Limits(timeout_s=0.5)
    with (
        warehouses.scratch() as folder,  # in memory, as the :memory: this stands in for
        Server(str(warehouses.empty(folder / "w.duckdb", shipped=True)), limits=limits) as served,
    ):
        with served.session(ADMIN) as session:
            session.run(INSERT, [10])
            session.run(ROLLUP).reader.read_all()
        yield served


def same(server: Server) -> bool:
    with server.session(ADMIN) as session:
        got = session.run("SELECT * FROM per_host ORDER BY host").reader.read_all()
        want = session.run(
            "SELECT host, sum(value) AS s, count(*) AS n FROM gpu_metrics GROUP BY ALL "
            "ORDER BY host"
        ).reader.read_all()
    equal: bool = got.to_pylist() == want.to_pylist()
    return equal


def test_an_open_transaction_that_wrote_holds_off_refreshes_and_writers(server: Server) -> None:
    slow = server.session(ADMIN)
    slow.run("BEGIN TRANSACTION")
    slow.run(INSERT, [5])  # batch id taken now, commit later
    with pytest.raises(WriterBusy, match="held the database"):
        server.refresh(ADMIN, "per_host")
    with server.session(ADMIN) as other, pytest.raises(WriterBusy):
        other.run(INSERT, [7])
    with server.session(ADMIN) as reader:  # readers are never held
        assert reader.run("SELECT count(*) FROM gpu_metrics").reader.read_all()[0][0].as_py() == 10
    slow.run("COMMIT")
    ((outcome, _),) = server.refresh(ADMIN, "per_host")
    assert isinstance(outcome, RefreshResult)  # typed now: Server.refresh no longer says Any
    assert outcome.refresh_mode == "incremental"
    assert same(server)
    slow.close()


def test_a_transaction_that_only_read_holds_nothing(server: Server) -> None:
    with server.session(ADMIN) as quiet:
        quiet.run("BEGIN TRANSACTION")
        quiet.run("SELECT count(*) FROM gpu_metrics").reader.read_all()
        server.refresh(ADMIN, "per_host")  # not held by a transaction that only read
        quiet.run("COMMIT")
    assert same(server)


def test_closing_a_session_mid_transaction_gives_the_gate_back(server: Server) -> None:
    gone = server.session(ADMIN)
    gone.run("BEGIN TRANSACTION")
    gone.run(INSERT, [3])
    gone.close()  # the client hung up: its transaction rolls back
    server.refresh(ADMIN, "per_host")
    assert same(server)


def test_concurrent_writers_and_refreshes_never_lose_rows(server: Server) -> None:
    """Writers in explicit transactions and refreshes interleave; the table ends equal."""
    errors: list[BaseException] = []

    def write(n: int) -> None:
        with server.session(ADMIN) as session:
            session.timeout_s = 30
            for _ in range(5):
                try:
                    session.run("BEGIN TRANSACTION")
                    session.run(INSERT, [n])
                    session.run("COMMIT")
                except BaseException as error:  # collected for the assert
                    errors.append(error)

    def refresh() -> None:
        for _ in range(5):
            try:
                server.refresh(ADMIN, "per_host")
            except WriterBusy:
                pass
            except BaseException as error:
                errors.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in (3, 4)]
    threads.append(threading.Thread(target=refresh))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    server.refresh(ADMIN, "per_host")
    assert same(server)


def test_the_gate_serves_writers_in_the_order_they_asked() -> None:
    """A holder that lets go and asks again at once queues behind those already waiting (a
    plain Lock hands it straight back: the scheduler's turns would starve remote_write)."""
    from service.serve.writes import WriteGate

    gate, order = WriteGate(), []
    job, waiting = object(), threading.Event()
    gate.acquire(job, 1, "compaction")

    def other(name: str) -> None:
        waiting.set()
        with gate.hold(object(), 10, name):
            order.append(name)

    writer = threading.Thread(target=other, args=("remote_write",))
    writer.start()
    assert waiting.wait(10)
    while not gate._queue:  # the writer's ticket is in
        threading.Event().wait(0.001)
    gate.release(job)
    with gate.hold(job, 10, "compaction"):
        order.append("compaction")
    writer.join(10)
    assert order == ["remote_write", "compaction"]


def test_a_waiter_that_gives_up_leaves_the_queue() -> None:
    from service.serve.writes import WriteGate

    gate = WriteGate()
    gate.acquire("a", 1, "sql")
    with pytest.raises(WriterBusy):
        gate.acquire("b", 0.05, "sql")
    assert not gate._queue
    gate.release("a")
    gate.acquire("c", 0.05, "sql")  # nobody ahead of it
    assert gate.holds("c")


def test_listeners_hear_the_oldest_sample_of_a_hold_or_none_once_a_write_could_not_say() -> None:
    from service.serve.writes import WriteGate

    gate, heard = WriteGate(), []
    gate.listen(lambda writer, oldest: heard.append((writer, oldest)))
    with gate.hold("a", 1, "remote_write", oldest_ms=500), gate.hold("a", 1, "remote_write", 200):
        gate.acquire("a", 1, "remote_write", oldest_ms=300)
    with gate.hold("b", 1, "remote_write", oldest_ms=500):
        gate.acquire("b", 1, "remote_write")  # a write that cannot say
        gate.acquire("b", 1, "remote_write", oldest_ms=100)
    with gate.hold("c", 1, "sql"):
        gate.acquire("c", 1, "sql", oldest_ms=100)
    assert heard == [("remote_write", 200), ("remote_write", None), ("sql", None)]


def test_a_long_hold_is_logged_with_its_writer(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.serve.writes import WriteGate

    monkeypatch.setattr("service.serve.writes.SLOW_HOLD_S", 0.02)
    gate = WriteGate()
    with caplog.at_level("INFO", logger="wanka.writes"):
        with gate.hold("quick", 1, "remote_write"):
            pass
        with gate.hold("slow", 1, "compaction"):
            threading.Event().wait(0.03)
    assert [(r.writer, r.levelname) for r in caplog.records] == [("compaction", "INFO")]  # type: ignore[attr-defined]
