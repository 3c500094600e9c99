"""The FastAPI application: routers, the caller's identity, and errors as `{"error": "..."}`.

A query's error also says what PostgreSQL would (`service.serve.pgerror`): `error` is its
message, with `sqlstate` and, where known, `position` (in the SQL sent), `hint` and `detail`
(DuckDB's own text).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse

from service.http import (
    fastpath,
    quick,
    routes_catalog,
    routes_ingest,
    routes_ops,
    routes_prom,
    routes_promwrite,
    routes_query,
    routes_rules,
    routes_web,
    workers,
)
from service.serve.pgerror import pg_error
from service.serve.server import Server
from service.serve.session import OutOfMemory, QueryCancelled, QueryTimeout
from warehouse.errors import UserError, WankaError
from warehouse.security.policy import Refused

#: Exception class → HTTP status; the first match in order wins (subclasses first).
STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (Refused, 403),
    (routes_ingest.TooLarge, 413),
    (QueryTimeout, 408),
    (OutOfMemory, 413),
    (QueryCancelled, 400),
    (LookupError, 404),
    (UserError, 400),
    (WankaError, 500),
)


def create_app(
    server: Server | None, *, open_locally: bool = False, pgwire: bool = False
) -> FastAPI:
    """The HTTP face of `server`.

    `open_locally`: let calls without credentials in as a local admin (only for a loopback
    server that has no users at all). With no server yet (`wanka serve` opening the database),
    every request but `/-/healthy` answers 503 until `app.state.server` is set.
    """
    app = App(
        lifespan=_lifespan,
        title="wanka",
        version="1",
        description=(
            "SQL over HTTP for a wanka warehouse. Authenticate with HTTP Basic (user:password) "
            "or `Authorization: Bearer <token>` (`wanka token create`). Readers run read-only "
            "statements; writers also ingest and change base tables; admins also run DDL and "
            'manage dynamic tables. Errors are `{"error": "..."}`; a query\'s error also has '
            "PostgreSQL's `sqlstate` and, where known, `position`, `hint` and `detail`."
        ),
    )
    app.state.server = server
    app.state.open_locally = open_locally
    app.state.pgwire = pgwire
    app.state.loop_share = quick.LoopShare()  # quick queries' share of the loop (quick.py)
    for router in (
        routes_query.router,
        routes_catalog.router,
        routes_ingest.router,
        routes_promwrite.router,
        routes_prom.router,
        routes_rules.router,
        routes_ops.router,
    ):
        app.include_router(router)
    app.include_router(routes_web.router)  # the browser face: /, /report, /v1/analyses
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    for cls in (WankaError, LookupError):
        app.add_exception_handler(cls, _error)
    app.add_exception_handler(Exception, _error)  # a bug: 500, and re-raised for test clients
    return app


class App(FastAPI):
    """FastAPI with `POST /v1/query` answered first, outside its middleware (fastpath.py)."""

    def build_middleware_stack(self) -> Any:
        stack = fastpath.FastQuery(
            super().build_middleware_stack(), routes_query.fast_query, error_response
        )
        return Starting(stack, self.state)


class Starting:
    """ASGI gate in front of everything: until the app has its server, `/-/healthy` answers
    200 and any other request 503 (`/-/ready` says "starting")."""

    def __init__(self, app: Any, state: Any) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or getattr(self.state, "server", None) is not None:
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/-/healthy":
            answer: Any = PlainTextResponse("wanka is Healthy.\n")
        elif scope["path"] == "/-/ready":
            answer = PlainTextResponse("wanka is not ready: starting.\n", status_code=503)
        else:
            answer = JSONResponse(
                {"error": "wanka is starting: the database is being opened"},
                status_code=503,
                headers={"Retry-After": "5"},
            )
        await answer(scope, receive, send)


async def error_response(request: Request, error: Exception) -> JSONResponse:
    """What the exception handlers above answer for `error` (a bug: a 500 naming its class)."""
    if isinstance(error, HTTPException):
        return await _http_error(request, error)
    return await _error(request, error)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # sync routes and response streams run in worker threads: room for many slow clients
    anyio.to_thread.current_default_thread_limiter().total_tokens = 128
    yield
    workers.close(app.state)


async def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    return JSONResponse(
        {"error": str(error.detail)}, status_code=error.status_code, headers=error.headers
    )


async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {item.get('msg', 'invalid')}")
    return JSONResponse({"error": "; ".join(problems) or "invalid request"}, status_code=400)


async def _error(request: Request, error: Exception) -> JSONResponse:
    for cls, status in STATUS:
        if isinstance(error, cls):
            if status == 500:
                return JSONResponse({"error": f"internal error: {error}"}, status_code=status)
            sql = getattr(request.state, "sql", None)  # set by the query routes
            if sql is None:
                return JSONResponse({"error": str(error)}, status_code=status)
            said = pg_error(error, sql).as_json()
            if said["sqlstate"] == "XX000":  # not a code a client can act on: left out
                del said["sqlstate"]
            return JSONResponse(said, status_code=status)
    # Anything else is a bug: say so without echoing internals (which might hold secrets).
    return JSONResponse({"error": f"internal error ({type(error).__name__})"}, status_code=500)
