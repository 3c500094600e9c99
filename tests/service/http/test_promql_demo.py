"""NVIDIA's dcgm-exporter dashboard on the demo warehouse (what `make run` builds): its
variables have values and every panel has data, because the simulated series carry the labels
a Prometheus scrape of dcgm-exporter gives them."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.serve.server import Limits, Server
from tests import demo_clusters
from tests.service.http.test_promql_api import (
    DASHBOARD,
    PASSWORD,
    READER,
    dashboard_queries,
    ok,
)
from tests.warehouses import Warehouses
from warehouse.security.users import add_user

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.skipif(not DASHBOARD.exists(), reason="no shared data")

#: The tiny demo: one host on each cluster, the Kubernetes one included.
TINY = demo_clusters.TINY.config
#: What every series of a GPU carries besides its job labels, as Prometheus stores it.
SCRAPED = {"__name__", "DCGM_FI_DRIVER_VERSION", "Hostname", "UUID", "device", "gpu",
           "instance", "job", "modelName", "pci_bus_id"}  # fmt: skip
JOB_LABELS = {"hpc_job", "container", "namespace", "pod"}


@pytest.fixture(scope="module")
def client(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses
) -> Iterator[TestClient]:
    from service.http import create_app

    path = Path(tmp_path_factory.mktemp("prom-demo")) / "w.duckdb"
    warehouses.demo(demo_clusters.TINY, path)
    with Server(str(path), limits=Limits(timeout_s=60, max_rows_json=10_000)) as server:
        cur = server.engine.cursor()
        add_user(cur, "reader", "reader", PASSWORD)
        cur.close()
        with TestClient(create_app(server), raise_server_exceptions=False) as test_client:
            yield test_client


def _values(client: TestClient, label: str) -> list[str]:
    params = {"match[]": "DCGM_FI_DEV_GPU_TEMP"}
    return list(ok(client.get(f"/api/v1/label/{label}/values", params=params, auth=READER)))


def test_the_variables_have_a_value_per_target_and_gpu(client: TestClient) -> None:
    instances = _values(client, "instance")
    assert instances and all(re.fullmatch(r"10(\.[0-9]{1,3}){3}:9400", i) for i in instances)
    assert _values(client, "gpu") == [str(g) for g in range(8)]
    jobs = ok(client.get("/api/v1/label/job/values", auth=READER))
    assert "dcgm-exporter" in jobs


def test_every_dashboard_panel_has_data_over_the_demo(client: TestClient) -> None:
    queries = dashboard_queries(client)
    assert len(queries) == 8
    start = TINY.start.timestamp()
    params = {"start": start, "end": start + TINY.hours * 3600, "step": TINY.interval_s}
    named = set()
    for title, expression in queries:
        data = ok(client.get("/api/v1/query_range", params={"query": expression, **params},
                             auth=READER))  # fmt: skip
        assert data["result"], f"panel {title!r} ({expression}) has no data"
        # A raw series has the scrape's labels and its job's; arithmetic drops the name.
        expected = SCRAPED - {"__name__"} if " * " in expression else SCRAPED
        for series in data["result"]:
            assert series["values"], title
            if "instance" in series["metric"]:  # not an aggregate
                assert set(series["metric"]) - JOB_LABELS == expected, series["metric"]
                named |= set(series["metric"]) & JOB_LABELS
    assert named == JOB_LABELS  # Slurm jobs and pods both ran
