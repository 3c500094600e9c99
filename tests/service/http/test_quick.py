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
    slow = fresh("SELECT sum(hash(range)) > 0 AS done FROM range(30000000)")
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


def _value(metrics: str, series: str) -> float:
    for line in metrics.splitlines():
        name, _, value = line.rpartition(" ")
        if name == series:
            return float(value)
    return 0.0
