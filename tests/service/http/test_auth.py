"""Credentials (401), roles (403) and the reader's attack strings over HTTP."""

from __future__ import annotations

import base64

import pytest

from tests.service.http.conftest import PASSWORD, Served
from tests.warehouse.security.test_policy import load_cases


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wk_not-a-token"},
        {"Authorization": "Basic " + base64.b64encode(b"reader:wrong").decode()},
        {"Authorization": "Basic " + base64.b64encode(b"nobody:" + PASSWORD.encode()).decode()},
        {"Authorization": "Basic !!!notbase64"},
        {"Authorization": "Digest abc"},
    ],
)
def test_no_or_wrong_credentials_is_401(served: Served, headers: dict[str, str]) -> None:
    response = served.client.post("/v1/query", json={"sql": "SELECT 1"}, headers=headers)
    assert response.status_code == 401
    assert "error" in response.json()
    assert "Basic" in response.headers["www-authenticate"]


def test_basic_and_bearer_work(served: Served) -> None:
    basic = served.client.get("/v1/tables", auth=served.auth("reader"))
    bearer = served.client.get("/v1/tables", headers={"Authorization": f"Bearer {served.token}"})
    assert basic.status_code == bearer.status_code == 200
    assert "users" not in {t["name"].split(".")[-1] for t in basic.json()}


def test_health_needs_no_credentials(served: Served) -> None:
    assert served.client.get("/healthz").json()["status"] == "ok"


READER_ATTACKS = [c for c in load_cases() if c.role == "reader" and not c.allowed]


@pytest.mark.parametrize("case", READER_ATTACKS, ids=lambda c: f"line{c.line}")
def test_reader_attack_is_403_and_runs_nothing(served: Served, case: object) -> None:
    sql = case.sql  # type: ignore[attr-defined]
    before = served.client.post(
        "/v1/query", json={"sql": "SELECT count(*) FROM sites"}, auth=served.auth("admin")
    ).json()["rows"]
    response = served.client.post("/v1/query", json={"sql": sql}, auth=served.auth("reader"))
    assert response.status_code == 403, response.text
    body = response.json()  # PostgreSQL's "permission denied ..." and the policy's reason
    said = f"{body['error']} {body.get('detail', '')}".lower()
    assert body["error"].startswith("permission denied") and body["sqlstate"] == "42501"
    assert case.expected.lower() in said  # type: ignore[attr-defined]
    after = served.client.post(
        "/v1/query", json={"sql": "SELECT count(*) FROM sites"}, auth=served.auth("admin")
    ).json()["rows"]
    assert before == after


def test_file_access_is_off_even_for_admins(served: Served) -> None:
    # the policy refuses it; were it to slip through, DuckDB itself refuses
    cur = served.server.engine.cursor()
    try:
        with pytest.raises(Exception, match="disabled by configuration"):
            cur.execute("SELECT * FROM read_text('/etc/hostname')")
    finally:
        cur.close()
