"""The workbench at `/` and the report at `/report`, served by uvicorn, in headless Chromium."""

from __future__ import annotations

import socket
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.serve.server import Server
from tests.browser import Browser
from tests.demo_clusters import TINY, DemoCluster
from tests.warehouses import Warehouses

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's note about httpx
    from fastapi.testclient import TestClient


def served_demo(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses, cluster: DemoCluster
) -> Iterator[Server]:
    """A Server over a copy of the demo of `cluster` (a module fixture's body)."""
    path = warehouses.demo(cluster, tmp_path_factory.mktemp("web") / "w.duckdb")
    with Server(str(path)) as served:
        yield served


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Server]:
    yield from served_demo(tmp_path_factory, warehouses, TINY)


@pytest.fixture(scope="module")
def url(server: Server) -> Iterator[str]:
    """The app on a loopback port (no users: local callers act as admin, as `wanka serve`)."""
    import uvicorn

    from service.http import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn accepts: no start-up race
    app = create_app(server, open_locally=True)
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    web.should_exit = True
    thread.join(timeout=30)
    sock.close()


def test_assets_are_local_and_analyses_run_with_text_parameters(server: Server) -> None:
    from service.http import create_app

    with TestClient(create_app(server, open_locally=True)) as client:
        page = client.get("/").text
        assert 'src="/static/app.js"' in page and "http" not in page.split("<body>")[1]
        assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")
        assert client.get("/static/../routes.py").status_code == 404
        listed = client.get("/v1/analyses").json()
        assert {"checkpoint_cost", "interconnect_balance"} <= {a["name"] for a in listed}
        done = client.post(
            "/v1/analyses/annual_cost", json={"params": {"tariff_usd_per_kwh": "0.2"}}
        )
        assert done.status_code == 200 and done.json()["rows"]
        bad = client.post("/v1/analyses/annual_cost", json={"params": {"tarif": "1"}})
        assert bad.status_code == 400 and "no parameter 'tarif'" in bad.json()["error"]


@pytest.mark.slow
def test_workbench_runs_an_example_and_sql_and_shows_dynamic_tables(
    url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    shots = tmp_path_factory.mktemp("web-shots")
    with Browser() as browser:
        page = browser.open(f"{url}/")
        page.until("document.querySelectorAll('#examples option').length > 10")
        page.until("document.getElementById('dynamic').dataset.loaded !== undefined")
        assert page.evaluate("document.querySelectorAll('#dynamic tbody tr').length") >= 4
        page.evaluate(
            "(() => { const s = document.getElementById('examples'); s.value = 'perf_per_watt';"
            "s.dispatchEvent(new Event('change')); document.getElementById('run').click(); })()"
        )
        page.until("document.querySelectorAll('#result tbody tr').length > 5")
        assert page.evaluate("document.querySelector('#params input').name") == "busy_util_pct"
        assert page.evaluate("document.querySelectorAll('#chart svg rect').length") > 5
        page.evaluate(
            "(() => { document.getElementById('sql').value = "
            "`SELECT time_bucket(INTERVAL '4 minutes', ts) AS t, avg(value) AS watts "
            "FROM gpu_metrics WHERE metric = 'DCGM_FI_DEV_POWER_USAGE' GROUP BY 1 ORDER BY 1`;"
            "document.getElementById('examples').value = '';"
            "document.getElementById('run').click(); })()"
        )
        page.until("document.querySelector('#result th').textContent === 't'")
        page.until("document.querySelector('#chart svg polyline') !== null")
        shot = page.screenshot(Path(shots) / "workbench.png")
        assert page.errors == []
        report = browser.open(f"{url}/report")
        assert report.evaluate("document.querySelectorAll('figure > svg').length") >= 8
        assert report.errors == []
    print(f"workbench screenshot: {shot}")


@pytest.mark.slow
def test_workbench_shows_sql_errors_in_the_page(url: str) -> None:
    with Browser() as browser:
        page = browser.open(f"{url}/")
        page.evaluate(
            "(() => { document.getElementById('sql').value = 'SELECT * FROM no_such_table';"
            "document.getElementById('run').click(); })()"
        )
        page.until("document.getElementById('status').className === 'error'")
        assert "no_such_table" in page.evaluate("document.getElementById('status').textContent")
