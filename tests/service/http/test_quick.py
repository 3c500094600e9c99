"""Quick queries are answered on the event loop; one that slows down is moved to the pool."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from service.http import quick, routes_query, workers
from tests.service.http.conftest import Served

_unique = itertools.count()


def fresh(sql: str) -> str:
    return f"{sql} /* test_quick {next(_unique)} */"


def post(served: Served, sql: str, role: str = "reader") -> Any:
    response = served.client.post("/v1/query", json={"sql": sql}, auth=served.auth(role))
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def pool_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts that went to the worker pool."""
    ran: list[str] = []
    real = workers.off_loop

    async def counted(request: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is routes_query.answer:
            ran.append(args[2].sql)
        return await real(request, fn, *args, **kwargs)

    monkeypatch.setattr(routes_query, "off_loop", counted)
    return ran


def test_a_quick_select_runs_on_the_pool_until_known_then_on_the_loop(
    served: Served, pool_runs: list[str]
) -> None:
    sql = fresh("SELECT site FROM sites ORDER BY site")
    for _ in range(20):  # the first runs parse it and prepare it: they cost more
        assert post(served, sql)["rows"] == [["alpha"], ["beta"]]
        if sql in quick.QUICK:
            break
    assert sql in quick.QUICK, "a two-row SELECT never became quick"
    known = len(pool_runs)
    for _ in range(3):
        assert post(served, sql)["rows"] == [["alpha"], ["beta"]]
    assert len(pool_runs) == known  # answered on the loop


def test_writes_and_streamed_results_never_become_quick(
    served: Served, pool_runs: list[str]
) -> None:
    write = fresh("INSERT INTO sites (site) SELECT 'w' || (random() * 1e9)::BIGINT")
    for _ in range(2):
        post(served, write, role="writer")
    big = fresh("SELECT range AS i FROM range(200000)")
    for _ in range(2):
        served.client.post(
            "/v1/query", json={"sql": big, "format": "csv"}, auth=served.auth("reader")
        )
    assert pool_runs == [write, write, big, big]
    assert write not in quick.QUICK and big not in quick.QUICK


def test_a_quick_text_that_slows_down_is_moved_to_the_pool_and_answered(
    served: Served, pool_runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = fresh("SELECT sum(hash(range)) > 0 AS done FROM range(100000000)")
    quick.QUICK.noted(slow, 0.0)  # as if it had been quick before
    monkeypatch.setattr(routes_query, "LOOP_S", 0.005)
    metrics = served.client.get("/metrics").text
    moved_before = _value(metrics, 'wanka_queries_total{face="http",format="json",outcome="moved"}')
    errors_before = metrics.count("QueryTimeout") + metrics.count('error="Moved"')
    assert post(served, slow)["rows"] == [[True]]  # interrupted on the loop, run again on the pool
    assert pool_runs == [slow] and slow not in quick.QUICK
    metrics = served.client.get("/metrics").text
    moved = _value(metrics, 'wanka_queries_total{face="http",format="json",outcome="moved"}')
    assert moved == moved_before + 1
    assert metrics.count("QueryTimeout") + metrics.count('error="Moved"') == errors_before


def test_a_quick_text_goes_to_the_pool_while_the_loops_share_is_spent(
    served: Served, pool_runs: list[str]
) -> None:
    sql = fresh("SELECT 41 + 1 AS answer")
    quick.QUICK.noted(sql, 0.0)
    state = served.client.app.state  # type: ignore[attr-defined]
    kept = state.loop_share
    try:
        state.loop_share = quick.LoopShare(window_s=3600, share_s=0)
        assert post(served, sql)["rows"] == [[42]]
        assert pool_runs == [sql] and sql in quick.QUICK  # still quick: the loop was only busy
    finally:
        state.loop_share = kept
    assert post(served, sql)["rows"] == [[42]]
    assert pool_runs == [sql]  # on the loop again


def test_quick_queries_get_at_most_their_share_of_the_loop() -> None:
    now = [100.0]
    share = quick.LoopShare(window_s=0.02, share_s=0.01, clock=lambda: now[0])
    busy = 0.0
    for _ in range(1000):  # 1 ms queries asking back to back, 0.1 ms apart
        if share.allows():
            with share.running():
                now[0] += 0.001
            busy += 0.001
        now[0] += 0.0001
    elapsed = now[0] - 100.0
    # half the loop's time, plus the first 10 ms of credit, give or take one query
    assert elapsed / 2 - 0.002 <= busy <= elapsed / 2 + 0.011, (busy, elapsed)
    now[0] += 1.0  # a quiet loop: the credit is whole again, and no more than that
    assert share.allows()
    with share.running():
        now[0] += 0.05  # one query 40 ms past the credit: 15 ms of debt (it accrued 25)...
    now[0] += 0.029  # ...which the loop pays off in 30 ms serving the others
    assert not share.allows()
    now[0] += 0.002
    assert share.allows()


def _value(metrics: str, series: str) -> float:
    for line in metrics.splitlines():
        name, _, value = line.rpartition(" ")
        if name == series:
            return float(value)
    return 0.0


def test_a_run_long_on_the_clock_is_slow_whatever_its_threads_cpu() -> None:
    """DuckDB's worker threads do a parallel query's work: the caller's CPU can be tiny."""
    known = quick.Quick()
    known.noted("a", 0.0001, 0.001)
    assert "a" in known
    known.noted("a", 0.0001, quick.LOOP_S)
    assert "a" not in known
    known.noted("b", 0.0001, quick.LOOP_S * 2)
    assert "b" not in known
