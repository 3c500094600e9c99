"""Superset's REST API as the steps use it (its Flask test client, an admin's bearer token), and
what the steps share: the logged-in API, the database, the datasets and wanka's own answers."""

from __future__ import annotations

from typing import Any

from tests.bi.harness import StepFailed
from tests.bi.truth import Truth


def error_of(payload: Any) -> tuple[str, str]:
    """(message, Superset's error type) of an API error answer."""
    if isinstance(payload, dict) and payload.get("errors"):
        first = payload["errors"][0]
        return str(first.get("message", "")).strip(), str(first.get("error_type", ""))
    if isinstance(payload, dict) and "message" in payload:
        return str(payload["message"]).strip(), ""
    return str(payload)[:300], ""


class Api:
    """Superset's REST API through its Flask test client, with an admin's bearer token."""

    def __init__(self, client: Any, token: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"}

    def get(self, path: str, **query: Any) -> tuple[int, Any]:
        answer = self.client.get(path, query_string=query, headers=self.headers)
        return answer.status_code, answer.get_json(silent=True)

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        answer = self.client.post(path, json=body, headers=self.headers)
        return answer.status_code, answer.get_json(silent=True)

    def ok(self, answer: tuple[int, Any], *expected: int) -> Any:
        status, payload = answer
        if status not in (expected or (200,)):
            raise StepFailed(f"HTTP {status}: {error_of(payload)[0]}")
        return payload


class Context:
    """What earlier steps made and later steps need; a missing one fails the step as not run."""

    def __init__(self) -> None:
        self.truth: Truth | None = None
        self._api: Api | None = None
        self._database_id: int | None = None
        self.datasets: dict[str, int] = {}

    @property
    def api(self) -> Api:
        if self._api is None:
            raise StepFailed("not run: no logged-in Superset")
        return self._api

    @property
    def database_id(self) -> int:
        if self._database_id is None:
            raise StepFailed("not run: the database was not created")
        return self._database_id

    def known(self) -> Truth:
        if self.truth is None:
            raise StepFailed("not run: wanka is not serving")
        return self.truth

    def dataset(self, table: str) -> int:
        if table not in self.datasets:
            raise StepFailed(f"not run: no dataset on {table}")
        return self.datasets[table]
