"""One served database per module, with a user of each role and a token, behind a TestClient."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from service.serve.server import Limits, Server
from tests.warehouses import Warehouses
from warehouse.security.users import add_user, create_token

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's note about httpx vs httpx2
    from fastapi.testclient import TestClient

PASSWORD = "s3cret-pw"


@dataclass
class Served:
    server: Server
    client: TestClient
    token: str  # the writer's bearer token

    def auth(self, role: str) -> tuple[str, str]:
        return (role, PASSWORD)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Served]:
    from service.http import create_app

    path = warehouses.empty(Path(tmp_path_factory.mktemp("served")) / "w.duckdb", shipped=True)
    limits = Limits(timeout_s=20, max_rows_json=1_000, max_upload_bytes=1 << 20)
    with Server(str(path), limits=limits) as server:
        server.start()  # serving, as `wanka serve` is (no scheduler, no feeds: none asked for)
        cur = server.engine.cursor()
        for role in ("reader", "writer", "admin"):
            add_user(cur, role, role, PASSWORD)
        token = create_token(cur, "writer")
        cur.execute("INSERT INTO sites (site) VALUES ('alpha'), ('beta')")
        cur.close()
        with TestClient(create_app(server), raise_server_exceptions=False) as client:
            yield Served(server, client, token)
