"""The OpenAPI document loads and validates, and schemathesis finds no 5xx in any operation."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.result import Ok

from service.serve.server import Limits, Server
from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.security.users import add_user

pytestmark = pytest.mark.slow
ADMIN = {"Authorization": "Basic " + base64.b64encode(b"root:pw").decode()}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[object]:
    from service.http import create_app

    path = warehouses.empty(Path(tmp_path_factory.mktemp("fuzz")) / "w.duckdb", shipped=True)
    with Server(str(path), limits=Limits(timeout_s=5, max_upload_bytes=1 << 20)) as server:
        server.start()  # serving, as `wanka serve` is (no scheduler, no feeds: none asked for)
        cur = server.engine.cursor()
        add_user(cur, "root", "admin", "pw")
        cur.close()
        yield create_app(server)


@pytest.fixture(scope="module")
def api_schema(app: object) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_document_is_openapi_3_with_every_route(api_schema: schemathesis.BaseSchema) -> None:
    raw = api_schema.raw_schema
    assert raw["openapi"].startswith("3.")
    assert {
        "/v1/query",
        "/v1/tables",
        "/v1/tables/{name}",
        "/v1/dynamic-tables",
        "/v1/dynamic-tables/{name}/refresh",
        "/v1/ingest/{fmt}",
        "/healthz",
        "/metrics",
    } <= set(raw["paths"])
    for operation in api_schema.get_all_operations():
        assert isinstance(operation, Ok), operation.err()  # an operation's definition is invalid


def test_no_server_errors(api_schema: schemathesis.BaseSchema) -> None:
    """Every operation, fuzzed from its schema as an admin (the widest role), answers < 500."""
    failures: list[str] = []
    for found in api_schema.get_all_operations():
        assert isinstance(found, Ok), found.err()
        operation = found.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=examples(0.25),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def no_5xx(case: schemathesis.Case[Any]) -> None:
            response = case.call(headers=ADMIN)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.text[:200]}")

        no_5xx()
    assert not failures, "\n".join(failures[:10])
