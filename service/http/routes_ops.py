"""The operator's endpoints, as Prometheus names them: `/-/healthy`, `/-/ready`, `/-/reload`.

`GET /-/healthy` answers 200 while the process runs; `GET /-/ready` 200 while it serves (the
database open and migrated, the parts started) and 503 before and once it is stopping, so a
load balancer or a readiness probe takes it out first. `POST /-/reload` (admin) rereads the
configuration file as SIGHUP does (service/config/reload.py): 200 when it was taken, 500 with
why when it was refused (the running configuration kept), 400 when serving without a file.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from service.http.auth import current_user
from service.http.routes_catalog import AUTH_ERRORS
from warehouse.errors import UserError
from warehouse.security.policy import Refused
from warehouse.security.users import User

router = APIRouter()


@router.get("/-/healthy", tags=["service"], response_class=PlainTextResponse)
def healthy() -> PlainTextResponse:
    """Liveness: 200 while the process runs, no credentials needed."""
    return PlainTextResponse("wanka is Healthy.\n")


@router.get("/-/ready", tags=["service"], response_class=PlainTextResponse)
def ready(request: Request) -> PlainTextResponse:
    """Readiness: 200 while serving, 503 while starting or stopping; no credentials needed."""
    state = request.app.state.server.state
    if state == "ready":
        return PlainTextResponse("wanka is Ready.\n")
    return PlainTextResponse(f"wanka is not ready: {state}.\n", status_code=503)


@router.post(
    "/-/reload",
    tags=["service"],
    responses={**AUTH_ERRORS, 403: {"description": "Reloading needs the admin role."}},
)
def reload(request: Request, user: Annotated[User, Depends(current_user)]) -> JSONResponse:
    """Reread the configuration file (admin), all or nothing."""
    if user.role != "admin":
        raise Refused(f"a {user.role} may not reload the configuration: that needs an admin")
    reloader = getattr(request.app.state, "reloader", None)
    if reloader is None:
        raise UserError("wanka serve was started without --config: there is no file to reread")
    outcome = reloader.reload()
    if not outcome.ok:
        return JSONResponse({"error": f"configuration not reloaded: {outcome.error}"}, 500)
    return JSONResponse({"status": "reloaded", "needs_restart": outcome.needs_restart})
