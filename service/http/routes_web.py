"""Routes of the browser face. Thin: files from `static/`, the report, the shipped analyses.

The page itself and its two assets need no credentials (they hold no data); everything that
reads the warehouse takes the same Basic or Bearer credentials as the rest of `/v1`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from service.http.auth import current_user
from service.http.models import Format, QueryRequest
from service.http.routes_query import URL_SAYS, answer
from service.http.url_options import with_url_options
from service.serve.server import Server
from warehouse.analyses import all_analyses, analysis_named
from warehouse.analyses.params import bind
from warehouse.report import build_html
from warehouse.security.users import User

router = APIRouter(tags=["web"])
STATIC = Path(__file__).parent / "static"
ASSETS = {"app.js": "text/javascript", "app.css": "text/css"}


class AnalysisRun(BaseModel):
    """Parameter values as text (converted to each parameter's declared type), and a format."""

    model_config = ConfigDict(extra="forbid")

    params: dict[str, str] = Field(default_factory=dict)
    format: Format = "json"
    max_rows: int | None = Field(default=None, ge=0, le=2**62)


@router.get("/", include_in_schema=False)
def index() -> FileResponse:
    """The SQL workbench."""
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    """No icon: an empty answer rather than a 404 in every browser console."""
    return Response(status_code=204)


@router.get("/static/{name}", include_in_schema=False)
def asset(name: str) -> FileResponse:
    """The workbench's script and style (served from here: no CDN)."""
    if name not in ASSETS:
        raise HTTPException(404, f"no static file {name!r}")
    return FileResponse(STATIC / name, media_type=ASSETS[name])


@router.get("/report", response_class=HTMLResponse, summary="The visual report")
def report(request: Request, user: Annotated[User, Depends(current_user)]) -> HTMLResponse:
    """The shipped analyses as one self-contained HTML page with charts (`wanka report`)."""
    server: Server = request.app.state.server
    return HTMLResponse(server.with_cursor(build_html))


@router.get("/v1/analyses", summary="The shipped analyses")
def analyses(user: Annotated[User, Depends(current_user)]) -> list[dict[str, Any]]:
    """Each analysis: name, one-line title, description, parameters with defaults, its SQL."""
    return [
        {
            "name": a.name,
            "title": a.title,
            "about": a.about,
            "params": [
                {"name": p.name, "type": p.type, "default": str(p.default), "about": p.description}
                for p in a.params
            ],
            "columns": [{"name": c.name, "about": c.description} for c in a.columns],
            "sql": a.sql,
        }
        for a in all_analyses().values()
    ]


@router.post("/v1/analyses/{name}", summary="Run a shipped analysis")
def run(
    name: str,
    body: AnalysisRun,
    request: Request,
    user: Annotated[User, Depends(current_user)],
    format: Annotated[Format | None, Query(description=URL_SAYS)] = None,
    max_rows: Annotated[int | None, Query(ge=0, le=2**62, description=URL_SAYS)] = None,
) -> Response:
    """Run analysis `name` as the calling user, with its parameters given as text; `format` and
    `max_rows` may be given in the URL instead of the body (the same in both, if in both)."""
    body = with_url_options(body, request.query_params, ("format", "max_rows"))
    analysis = analysis_named(name)
    values = bind(analysis.params, body.params, name)
    query = QueryRequest(sql=analysis.sql, params=values or None, format=body.format)
    query.max_rows = body.max_rows
    return answer(request.app.state.server, user, query)
