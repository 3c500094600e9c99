"""While `wanka serve` opens its database, HTTP already answers: `/-/healthy` 200, `/-/ready`
and every other request 503 (the start-up gate); once the app has its server, they serve."""

from __future__ import annotations

import warnings
from pathlib import Path

from service.http import create_app
from service.serve.server import Server
from tests.warehouses import Warehouses

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's note about httpx vs httpx2
    from fastapi.testclient import TestClient


def test_the_gate_answers_503_until_the_server_is_there(
    tmp_path: Path, warehouses: Warehouses
) -> None:
    app = create_app(None, open_locally=True)
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/-/healthy").status_code == 200
        ready = client.get("/-/ready")
        assert (ready.status_code, ready.text) == (503, "wanka is not ready: starting.\n")
        for answer in (
            client.post("/v1/query", json={"sql": "SELECT 1"}),  # the fast path too
            client.get("/api/v1/query", params={"query": "up"}),
            client.get("/metrics"),
        ):
            assert answer.status_code == 503
            assert answer.headers["retry-after"] == "5"
            assert "starting" in answer.json()["error"]
        path = warehouses.empty(tmp_path / "w.duckdb")
        with Server(str(path)) as server:
            server.start()
            app.state.server = server
            assert client.get("/-/ready").text == "wanka is Ready.\n"
            answer = client.post("/v1/query", json={"sql": "SELECT 41 + 1 AS n"})
            assert answer.json()["rows"] == [[42]]
            server.state = "stopping"
            assert client.get("/-/ready").status_code == 503
