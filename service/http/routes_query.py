"""`/v1/query`: run SQL as the calling user and stream the result in the format asked for."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Generator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response, StreamingResponse

from service.http.auth import current_user
from service.http.fastpath import parse
from service.http.models import Error, Format, QueryRequest, QueryResponse
from service.http.quick import LOOP_S, QUICK, LoopShare
from service.http.stream import MEDIA_TYPES, RENDERERS, read_head
from service.http.url_options import with_url_options
from service.http.workers import off_loop
from service.serve.server import Server
from service.serve.session import ClientGone, Moved, Session
from service.serve.watchdog import WATCHDOG
from warehouse.errors import UserError
from warehouse.query import search_path
from warehouse.security.users import User

router = APIRouter(tags=["query"])
URL_SAYS = "As in the body, which it may replace; given in both, the two must be the same."

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Error, "description": "Bad SQL or input."},
    401: {"model": Error, "description": "No or wrong credentials."},
    403: {"model": Error, "description": "The role may not run this statement."},
    408: {"model": Error, "description": "The query ran past its time limit."},
    413: {"model": Error, "description": "The query needed more memory than allowed."},
}
RESULT: dict[int | str, dict[str, Any]] = {
    200: {
        "model": QueryResponse,
        "description": "The result, streamed: JSON, or the bytes of the format asked for.",
        "content": {media: {} for fmt, media in MEDIA_TYPES.items() if fmt != "json"},
    }
}


def answer(server: Server, user: User, query: QueryRequest, *, on_loop: bool = False) -> Response:
    """Run `query` in a session of its own (blocking: on a worker, or on the loop for a text
    `quick.QUICK` knows, under its deadline: `Moved` past it).

    A result whose first batches are all of it is rendered here and answered in one piece;
    a longer one streams batch by batch and the session closes after its last byte.
    """
    session = server.session(user, fmt=query.format)
    deadline = (
        WATCHDOG.arm(LOOP_S, lambda: session.interrupt(Moved("off the loop"))) if on_loop else None
    )
    try:
        # the loop is one thread: it does not queue behind the workers at the gate
        with contextlib.nullcontext() if on_loop else session.turn():
            started = time.thread_time()  # the CPU this query costs, not its waits
            began = time.perf_counter()
            sql = query.sql
            if query.schema_:
                path = search_path.parse_path(query.schema_)
                sql = search_path.qualify_sql(sql, path, search_path.relations(session.cursor))
            result = session.run(
                sql, query.params, timeout_s=query.timeout_s, max_rows=query.max_rows
            )
            batches, whole = read_head(result)
            if whole:  # small: no stream, no thread hop per chunk
                body = b"".join(RENDERERS[query.format](result, batches))
    except BaseException:
        session.close()
        raise
    finally:
        if deadline is not None:
            WATCHDOG.disarm(deadline)
    headers = {"X-Wanka-Statement": result.statement}
    media = MEDIA_TYPES[query.format]
    if whole:
        session.close()
        if result.statement == "SELECT" and not session.wrote:
            QUICK.noted(query.sql, time.thread_time() - started, time.perf_counter() - began)
        return Response(body, media_type=media, headers=headers)
    QUICK.forget(query.sql)

    def stream() -> Generator[bytes]:
        try:
            yield from RENDERERS[query.format](result, batches)
        finally:
            session.close()

    return SessionResponse(stream(), session, media_type=media, headers=headers)


class SessionResponse(StreamingResponse):
    """A streamed result that interrupts its query when the client goes away mid-stream."""

    def __init__(self, content: Generator[bytes], session: Session, **options: Any) -> None:
        super().__init__(content, **options)
        self.session = session
        self.content = content

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            # no-ops once the last byte went out; otherwise DuckDB stops producing for nobody
            # and the session is released now rather than whenever the generator is collected
            self.session.interrupt(ClientGone("the client went away"))
            with contextlib.suppress(ValueError):  # still running in a worker: it ends itself
                self.content.close()


#: The options a POST may give in its URL as GET does (service/http/url_options.py).
URL_OPTIONS = ("format", "max_rows", "timeout_s", "schema")


async def fast_query(request: Request, body: bytes) -> Response | None:
    """`POST /v1/query` from `service.http.fastpath`: None leaves it to the route below."""
    query = parse(body, QueryRequest)
    if query is None:
        return None
    query = with_url_options(query, request.query_params, URL_OPTIONS)
    request.state.sql = query.sql  # an error's position is in this text (app._error)
    user = await current_user(request)
    server = request.app.state.server
    share: LoopShare = request.app.state.loop_share
    quick = query.sql in QUICK and (query.timeout_s is None or query.timeout_s > LOOP_S)
    if quick and share.allows():
        try:
            with share.running():
                return answer(server, user, query, on_loop=True)
        except Moved:
            QUICK.forget(query.sql)  # slower than it was: run it again where it may take long
    return await off_loop(request, answer, server, user, query)


@router.post("/v1/query", responses={**RESULT, **ERRORS}, summary="Run SQL")
async def post_query(
    query: QueryRequest,
    request: Request,
    user: Annotated[User, Depends(current_user)],
    format: Annotated[Format | None, Query(description=URL_SAYS)] = None,
    max_rows: Annotated[int | None, Query(ge=0, le=2**62, description=URL_SAYS)] = None,
    timeout_s: Annotated[float | None, Query(gt=0, le=86_400, description=URL_SAYS)] = None,
    schema: Annotated[str | None, Query(max_length=1000, description=URL_SAYS)] = None,
) -> Response:
    """Run one statement (readers) or a script (writers, admins) and stream its last result.

    The options may be given in the URL instead of the body (`?format=csv`), as GET takes them;
    one given in both must be the same."""
    query = with_url_options(query, request.query_params, URL_OPTIONS)  # validated above
    request.state.sql = query.sql
    return await off_loop(request, answer, request.app.state.server, user, query)


@router.get("/v1/query", responses={**RESULT, **ERRORS}, summary="Run SQL (GET)")
async def get_query(
    request: Request,
    user: Annotated[User, Depends(current_user)],
    sql: Annotated[str, Query(min_length=1, max_length=100_000)],
    format: Format = "json",
    max_rows: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    timeout_s: Annotated[float | None, Query(gt=0, le=86_400)] = None,
    params: Annotated[str | None, Query(description="A JSON array or object.")] = None,
    schema: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """The same as POST, with the query in the URL (`params` as JSON text)."""
    values = None
    if params:
        try:
            values = json.loads(params)
        except ValueError:
            raise UserError("params is not JSON: give a JSON array or object") from None
        if not isinstance(values, (list, dict)):
            raise UserError("params must be a JSON array or object")
    query = QueryRequest(
        sql=sql,
        params=values,
        format=format,
        max_rows=max_rows,
        timeout_s=timeout_s,
        schema=schema,
    )
    request.state.sql = query.sql
    return await off_loop(request, answer, request.app.state.server, user, query)
