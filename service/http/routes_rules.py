"""`/api/v1/rules` and `/api/v1/alerts` as Prometheus 2.42 answers them (so Grafana lists the
rules and alerts, read-only: wanka's buildinfo has no `features`), from the serve process's rule
groups (`service/serve/rules.py`; the shapes in `warehouse/rules/api.py`). Any signed-in user
may read them, as any may read `wanka.rules` and `wanka.alerts`; groups change only through
the rule files and a reload."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from service.http.auth import current_user
from service.http.routes_prom import envelope
from warehouse.security.users import User

router = APIRouter(tags=["prometheus"])


@router.get("/api/v1/rules", summary="Rule groups, their rules and alerts (as Prometheus 2.42)")
async def prom_rules(
    request: Request, user: Annotated[User, Depends(current_user)], type: str | None = None
) -> Response:
    data: dict[str, Any] = request.app.state.server.rules.snapshot[0]
    kind = {"alert": "alerting", "record": "recording"}.get(type or "")
    if kind is not None:
        data = {"groups": [
            {**group, "rules": [r for r in group["rules"] if r["type"] == kind]}
            for group in data["groups"]
        ]}  # fmt: skip
    return envelope(data)


@router.get("/api/v1/alerts", summary="Active alerts (as Prometheus 2.42)")
async def prom_alerts(request: Request, user: Annotated[User, Depends(current_user)]) -> Response:
    return envelope(request.app.state.server.rules.snapshot[1])
