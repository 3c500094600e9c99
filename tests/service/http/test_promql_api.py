"""The Prometheus query API on a served database, as Grafana's Prometheus data source calls
it: the envelope, status codes, the metadata endpoints, and NVIDIA's dcgm-exporter dashboard
with its variables expanded as Grafana does, answered as a real Prometheus answers it."""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.serve.server import Limits, Server
from tests.warehouse.promql import reference as ref
from tests.warehouses import Warehouses
from warehouse.security.users import add_user

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

PASSWORD = "s3cret-pw"
READER = ("reader", PASSWORD)
DASHBOARD = (
    Path(os.environ.get("WANKA_SHARED_DATA", Path(__file__).parents[4] / "shared" / "data"))
    / "grafana"
    / "dcgm-exporter-dashboard.json"
)
AT = (ref.T0 + 1_807_000) / 1000


@pytest.fixture(scope="module")
def client(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses
) -> Iterator[TestClient]:
    from service.http import create_app

    path = warehouses.empty(Path(tmp_path_factory.mktemp("prom")) / "w.duckdb", shipped=True)
    with Server(str(path), limits=Limits(timeout_s=20, max_rows_json=1_000)) as server:
        ref.load_wanka(server.engine, ref.cluster())
        cur = server.engine.cursor()
        add_user(cur, "reader", "reader", PASSWORD)
        cur.close()
        with TestClient(create_app(server), raise_server_exceptions=False) as test_client:
            yield test_client


def ok(answer: Any) -> Any:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "success"
    return body["data"]


def test_an_instant_query_answers_in_prometheus_shape(client: TestClient) -> None:
    data = ok(client.get("/api/v1/query", params={"query": 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}',
                                                  "time": AT}, auth=READER))  # fmt: skip
    assert data["resultType"] == "vector" and len(data["result"]) == 4
    first = data["result"][0]
    assert first["metric"]["__name__"] == "DCGM_FI_DEV_GPU_TEMP"
    assert {"Hostname", "UUID", "gpu", "modelName", "instance", "job", "device"} <= set(
        first["metric"]
    )
    assert first["value"][0] == AT and isinstance(first["value"][1], str)
    float(first["value"][1])


def test_a_range_query_by_form_post_and_rfc3339(client: TestClient) -> None:
    form = {
        "query": "sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))",
        "start": str(ref.T0 // 1000 + 600),
        "end": str(ref.T_END / 1000),
        "step": "1m",
    }
    data = ok(client.post("/api/v1/query_range", data=form, auth=READER))
    assert data["resultType"] == "matrix" and len(data["result"]) == 4
    assert len(data["result"][0]["values"]) == 51
    again = {**form, "start": _rfc3339(ref.T0 / 1000 + 600)}
    same = client.post("/api/v1/query_range", data=again, auth=READER).json()
    assert ref.differences(same, {"status": "success", "data": data}) == []


def _rfc3339(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("params", "status", "kind", "says"),
    [
        ({"query": "sum(("}, 400, "bad_data", "parse error"),
        ({"query": ""}, 400, "bad_data", "empty"),
        ({"query": "up", "time": "yesterday"}, 400, "bad_data", "timestamp"),
        ({"query": 'count_values("v", up)'}, 422, "execution", "count_values"),
        ({"query": "up", "start": "0", "end": "100000", "step": "1"}, 400, "bad_data", "11,000"),
        ({"query": "up", "start": "10", "end": "0", "step": "1"}, 400, "bad_data", "before"),
        ({"query": "up", "start": "0", "end": "10", "step": "0"}, 400, "bad_data", "step"),
        ({"query": "up", "start": "0", "end": "10"}, 400, "bad_data", "step"),
        ({"query": 'label_replace(up, "x", "y", "job", "(")'}, 422, "execution", "regular"),
    ],
)
def test_bad_requests_get_prometheus_error_types(
    client: TestClient, params: dict[str, str], status: int, kind: str, says: str
) -> None:
    path = "/api/v1/query_range" if "start" in params else "/api/v1/query"
    answer = client.get(path, params=params, auth=READER)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == "error" and body["errorType"] == kind
    assert says.lower() in body["error"].lower()


def test_a_clash_of_label_sets_is_an_execution_error(client: TestClient) -> None:
    query = 'label_replace(max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP), "gpu", "x", "gpu", ".*")'
    answer = client.get("/api/v1/query", params={"query": query, "time": AT}, auth=READER)
    assert answer.status_code == 422
    assert "same labelset" in answer.json()["error"]


def test_deep_nesting_is_refused_and_the_server_still_answers(client: TestClient) -> None:
    deep = "(" * 200 + "up" + ")" * 200
    answer = client.get("/api/v1/query", params={"query": deep, "time": AT}, auth=READER)
    assert answer.status_code == 400
    ok(client.get("/api/v1/query", params={"query": "up", "time": AT}, auth=READER))


@pytest.mark.parametrize("pattern", ["(a+)+$", "((((.*)*)*)*)*x", "(.*a){20}", "(\\\\d{2,}){500}"])
def test_regexes_that_backtrack_elsewhere_answer_at_once(client: TestClient, pattern: str) -> None:
    """RE2 (DuckDB's regexp_full_match, as Prometheus's Go regexp) runs in linear time."""
    expression = f'count(DCGM_FI_DEV_GPU_TEMP{{instance=~"{pattern}"}})'
    params = {"query": expression, "start": ref.T0 / 1000, "end": ref.T_END / 1000, "step": 15}
    began = time.perf_counter()
    data = ok(client.get("/api/v1/query_range", params=params, auth=READER))
    assert data["result"] == [] and time.perf_counter() - began < 5


@pytest.mark.parametrize(
    ("pattern", "says"), [("a{1000}{1000}", "illegal regex"), ("(?P<x>a)\\\\1", "illegal regex"),
                          ("(" * 5_000 + "a" + ")" * 5_000, "")],
)  # fmt: skip
def test_regexes_too_big_or_not_re2_are_refused(
    client: TestClient, pattern: str, says: str
) -> None:
    expression = f'up{{instance=~"{pattern}"}}'
    answer = client.get("/api/v1/query", params={"query": expression, "time": AT}, auth=READER)
    assert answer.status_code == 400 and says in answer.json()["error"]
    ok(client.get("/api/v1/query", params={"query": "up", "time": AT}, auth=READER))


def test_credentials_are_needed(client: TestClient) -> None:
    assert client.get("/api/v1/query", params={"query": "up"}).status_code == 401
    wrong = ("reader", "nope")
    assert client.get("/api/v1/query", params={"query": "up"}, auth=wrong).status_code == 401


def test_metadata_endpoints(client: TestClient) -> None:
    instances = ok(client.get("/api/v1/label/instance/values",
                              params={"match[]": "DCGM_FI_DEV_GPU_TEMP"}, auth=READER))  # fmt: skip
    assert instances == [f"10.0.0.{h}:9400" for h in range(10, 14)]
    names = ok(client.get("/api/v1/label/__name__/values", auth=READER))
    assert "DCGM_FI_DEV_GPU_TEMP" in names and "up" in names
    labels = ok(client.get("/api/v1/labels", auth=READER))
    assert {"__name__", "Hostname", "UUID", "gpu", "pod", "mode"} <= set(labels)
    series = ok(client.get("/api/v1/series", params={"match[]": 'up{instance=~".*:9100"}'},
                           auth=READER))  # fmt: skip
    assert len(series) == 4 and series[0]["job"] == "node"
    missing = client.get("/api/v1/series", auth=READER)
    assert missing.status_code == 400 and missing.json()["errorType"] == "bad_data"
    build = ok(client.get("/api/v1/status/buildinfo", auth=READER))
    assert build["version"] == "2.42.0"
    meta = ok(client.get("/api/v1/metadata", auth=READER))
    assert meta["DCGM_FI_DEV_GPU_TEMP"][0]["type"] == "gauge"
    pretty = ok(client.get("/api/v1/format_query", params={"query": "sum(up)by(job)"},
                           auth=READER))  # fmt: skip
    assert pretty == "sum by (job) (up)"


def grafana_regex(values: list[str]) -> str:
    """A multi-value variable as Grafana writes it into PromQL: regex-escaped (the backslash
    doubled, inside a PromQL string), alternated."""
    escaped = [re.sub(r"([\\^$*+?.()|{}\[\]])", r"\\\\\1", v) for v in values]
    return "(" + "|".join(escaped) + ")" if len(escaped) > 1 else escaped[0]


def dashboard_queries(client: TestClient) -> list[tuple[str, str]]:
    """(panel title, expression) of every panel, its variables set to All as Grafana sets
    them: each `label_values(metric, label)` asked of /api/v1/label/<label>/values."""
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    values: dict[str, str] = {}
    for variable in board["templating"]["list"]:
        found = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable.get("query") or "")
        if found:
            metric, label = found.groups()
            got = ok(client.get(f"/api/v1/label/{label}/values", params={"match[]": metric},
                                auth=READER))  # fmt: skip
            assert got, f"variable {variable['name']} has no values"
            values[variable["name"]] = grafana_regex(got)
    queries = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expression = target["expr"]
            for name, regex in values.items():
                expression = expression.replace(f"${name}", regex)
            queries.append((panel["title"], expression.replace("$__rate_interval", "1m")))
    return queries


@pytest.mark.skipif(not DASHBOARD.exists(), reason="no shared data")
def test_every_dashboard_panel_answers_with_data(client: TestClient) -> None:
    queries = dashboard_queries(client)
    assert len(queries) == 8
    for title, expression in queries:
        params = {"query": expression, "start": ref.T0 / 1000, "end": ref.T_END / 1000,
                  "step": 60}  # fmt: skip
        data = ok(client.get("/api/v1/query_range", params=params, auth=READER))
        assert data["result"], f"panel {title!r} ({expression}) has no data"


@pytest.mark.skipif(not (DASHBOARD.exists() and ref.available()), reason="no prometheus")
def test_dashboard_panels_over_http_equal_prometheus(client: TestClient, tmp_path: Path) -> None:
    queries = dashboard_queries(client)
    report = []
    for prometheus in ref.start(tmp_path, ref.cluster()):
        for _, expression in queries:
            params = {"query": expression, "start": ref.T0 / 1000, "end": ref.T_END / 1000,
                      "step": 60}  # fmt: skip
            ours = client.get("/api/v1/query_range", params=params, auth=READER).json()
            theirs = prometheus.query("/api/v1/query_range", params)
            report += ref.differences(ours, theirs)
            instant = {"query": expression, "time": AT}
            ours = client.get("/api/v1/query", params=instant, auth=READER).json()
            report += ref.differences(ours, prometheus.query("/api/v1/query", instant))
    assert not report, report[:5]


@pytest.mark.parametrize(
    "expression",
    [
        "sum(DCGM_FI_DEV_POWER_USAGE)",
        "avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_TEMP[10m]))",
        "max(DCGM_FI_DEV_GPU_TEMP) by (modelName)",
        "count without (gpu) (min_over_time(DCGM_FI_DEV_GPU_TEMP[4m] offset 2m))",
    ],
)
def test_the_fast_path_answers_a_reader_as_the_sql_route(
    client: TestClient, expression: str
) -> None:
    """`warehouse.promql.native` runs in the reader's session and answers what SQL answers."""
    from unittest import mock

    from warehouse.promql import native

    params = {"query": expression, "start": ref.T0 / 1000, "end": ref.T_END / 1000, "step": 120}
    instant = {"query": expression, "time": AT}
    fast = client.get("/api/v1/query_range", params=params, auth=READER).json()
    fast_instant = client.get("/api/v1/query", params=instant, auth=READER).json()
    with mock.patch.object(native, "ENABLED", False):
        general = client.get("/api/v1/query_range", params=params, auth=READER).json()
        general_instant = client.get("/api/v1/query", params=instant, auth=READER).json()
    assert ok_data(fast)["result"] and not ref.differences(fast, general)
    assert ok_data(fast_instant)["result"] and not ref.differences(fast_instant, general_instant)
    assert client.get("/api/v1/query_range", params=params).status_code == 401


def ok_data(body: Any) -> Any:
    assert body["status"] == "success", body
    return body["data"]
