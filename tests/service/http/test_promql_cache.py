"""The PromQL result cache behind `/api/v1/query_range` (warehouse/promql/result_cache.py), on a
served database: Grafana's panels over a window that moves on answer as the query evaluated
whole, a late remote_write into the kept past shows at once, and current samples keep it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.service.http.conftest import Served
from tests.service.http.test_promql_api import DASHBOARD, dashboard_queries
from tests.warehouse.promql import reference as ref
from tests.warehouse.remote_write.support import body
from warehouse.promql.result_cache import ResultCache

STEP_S = 30
HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}
EXTRA = (
    "sum(rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))",
    "avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_TEMP[10m]))",
    "max(DCGM_FI_DEV_GPU_TEMP) by (modelName)",
    "count(DCGM_FI_DEV_GPU_TEMP)",
)
#: The cache's clock in ms, which the tests move on (40 minutes into the reference hour).
NOW = [ref.T0 + 40 * 60_000]


@pytest.fixture(scope="module")
def cache(served: Served) -> Iterator[ResultCache]:
    """The reference cluster's hour (3 h ago) in the served database, and its cache on a clock
    40 minutes into that hour."""
    ref.load_wanka(served.server.engine, ref.cluster())
    found = served.server.promql_cache
    found.clock = lambda: NOW[0] / 1000
    yield found
    found.clock = time.time


def ask(served: Served, expression: str, start_ms: int, end_ms: int) -> dict[str, Any]:
    params = {"query": expression, "start": start_ms / 1000, "end": end_ms / 1000, "step": STEP_S}
    answer = served.client.get("/api/v1/query_range", params=params, auth=served.auth("reader"))
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def whole(served: Served, cache: ResultCache, expression: str, lo: int, hi: int) -> dict[str, Any]:
    """The answer with nothing kept (the cache off for the one request)."""
    offset, cache.offset_ms = cache.offset_ms, 0
    try:
        return ask(served, expression, lo, hi)
    finally:
        cache.offset_ms = offset


def window(minutes: int = 30) -> tuple[int, int]:
    end = NOW[0] // (STEP_S * 1000) * STEP_S * 1000
    return end - minutes * 60_000, end


@pytest.mark.skipif(not DASHBOARD.exists(), reason="no shared data")
def test_panels_over_a_moving_window_answer_as_evaluated_whole(
    served: Served, cache: ResultCache
) -> None:
    expressions = [e for _, e in dashboard_queries(served.client)] + list(EXTRA)
    for _ in range(4):
        lo, hi = window()
        for expression in expressions:
            got = ask(served, expression, lo, hi)
            assert got["data"]["result"], expression
            assert not ref.differences(got, whole(served, cache, expression, lo, hi)), expression
        NOW[0] += STEP_S * 1000
    assert cache.points > 0
    text = served.server.metrics.render()
    assert 'wanka_promql_cache_answers_total{kind="partial"}' in text


def test_a_late_sample_shows_at_once_and_current_ones_keep_the_cache(
    served: Served, cache: ResultCache
) -> None:
    expression = "count(DCGM_FI_DEV_GPU_TEMP)"
    lo, hi = window()
    first = ask(served, expression, lo, hi)
    kept = cache.points
    assert kept > 0
    labels = [("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("Hostname", "late-node"), ("gpu", "0"),
              ("UUID", "GPU-late")]  # fmt: skip
    now_ms = NOW[0]
    write = served.client.post(
        "/api/v1/write", content=body([(labels, [(now_ms - 1_000, 50.0)])]), headers=HEADERS,
        auth=served.auth("writer"),
    )  # fmt: skip
    assert write.status_code == 204, write.text
    assert cache.points == kept  # a current sample: the kept steps stay
    late = lo + 10 * 60_000
    write = served.client.post(
        "/api/v1/write", content=body([(labels, [(late, 60.0)])]), headers=HEADERS,
        auth=served.auth("writer"),
    )  # fmt: skip
    assert write.status_code == 204, write.text
    assert cache.points == 0
    second = ask(served, expression, lo, hi)
    assert not ref.differences(second, whole(served, cache, expression, lo, hi))
    counts = [{json.dumps(p) for p in a["data"]["result"][0]["values"]} for a in (first, second)]
    assert counts[0] != counts[1]  # the late sample counts in the steps it reaches
