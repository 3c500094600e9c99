"""The Prometheus HTTP query API (`/api/v1/query`, `query_range`, `series`, `labels`,
`label/{name}/values`, `metadata`, `status/buildinfo`, `format_query`), so Grafana's
Prometheus data source and other PromQL clients work against wanka unchanged.

Parameters come as Prometheus takes them: in the URL or a form body (POST), times as Unix
seconds or RFC 3339, durations as seconds or PromQL durations. Answers are Prometheus's
envelope (`status`, `data`, `errorType`, `error`, `warnings`); errors carry its status codes:
400 bad_data, 422 execution, 503 timeout. The PromQL is translated to SQL
(warehouse/promql) and run in the caller's session: the same role checks, time limit and
row cap as `/v1/query` (a series is a row).
"""

from __future__ import annotations

import json
import time
from importlib import metadata
from typing import Annotated, Any

import pyarrow as pa
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from service.http.auth import current_user
from service.http.workers import off_loop
from service.serve.server import Server
from service.serve.session import QueryTimeout, Session
from warehouse.errors import UserError
from warehouse.promql import catalog, evaluate, native, render, result_cache, times, translate
from warehouse.promql.evaluate import Compiled
from warehouse.promql.plan import PromQLError
from warehouse.security.policy import Refused
from warehouse.security.users import User

router = APIRouter(tags=["prometheus"])

MIN_MS, MAX_MS = -(2**62) // 1_000_000, 2**62 // 1_000_000  # Prometheus's min/max time


class ApiError(Exception):
    def __init__(self, kind: str, message: str, status: int) -> None:
        super().__init__(message)
        self.kind, self.status = kind, status


def bad(message: str) -> ApiError:
    return ApiError("bad_data", message, 400)


def envelope(data: Any, warnings: list[str] | None = None) -> Response:
    """Prometheus's success envelope; `data` may be JSON bytes already (a matrix)."""
    if isinstance(data, bytes):
        tail = f',"warnings":{json.dumps(warnings)}}}' if warnings else "}"
        return Response(b'{"status":"success","data":' + data + tail.encode(),
                        media_type="application/json")  # fmt: skip
    body: dict[str, Any] = {"status": "success", "data": data}
    if warnings:
        body["warnings"] = warnings
    return JSONResponse(body)


def failure(error: ApiError) -> JSONResponse:
    body = {"status": "error", "errorType": error.kind, "error": str(error)}
    return JSONResponse(body, status_code=error.status)


async def params(request: Request) -> dict[str, list[str]]:
    """The URL's parameters and, for a form POST, the form's (Prometheus reads both)."""
    found: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        found.setdefault(key, []).append(value)
    if request.method == "POST":
        form = await request.form()
        for key, item in form.multi_items():
            if isinstance(item, str):
                found.setdefault(key, []).append(item)
    return found


def one(given: dict[str, list[str]], name: str) -> str | None:
    values = given.get(name)
    return values[-1] if values else None


def time_ms(text: str | None, name: str, default: int) -> int:
    """A time parameter (Unix seconds, fractions allowed, or RFC 3339) in ms."""
    if text is None or text == "":
        return default
    found = times.seconds(text)
    if found is None:
        raise bad(f'invalid parameter "{name}": cannot parse "{text}" to a valid timestamp')
    return max(MIN_MS, min(MAX_MS, round(found * 1000)))


def duration_ms(text: str, name: str) -> int:
    found = times.duration_ms(text)
    if found is None:
        raise bad(f'invalid parameter "{name}": cannot parse "{text}" to a valid duration')
    return found


def _timeout_s(given: dict[str, list[str]]) -> float | None:
    text = one(given, "timeout")
    if text is None:
        return None
    ms = duration_ms(text, "timeout")
    if ms <= 0:
        raise bad('invalid parameter "timeout": must be positive')
    return ms / 1000


def run_rows(server: Server, user: User, sql: str, timeout_s: float | None) -> list[Any]:
    """Every row of `sql` run as `user`; errors as the query API words them."""
    session = server.session(user, face="promql", fmt="json")
    try:
        with session.turn():
            table, truncated = _table(session, sql, timeout_s)
            if truncated:
                raise ApiError(
                    "execution",
                    f"the answer has more than {session.max_rows:,} series: narrow the selector",
                    422,
                )
    finally:
        session.close()
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def _table(
    session: Session, sql: str, timeout_s: float | None, params: dict[str, Any] | None = None
) -> tuple[pa.Table, bool]:
    """`sql`'s rows on `session` (with its named `params`), and whether its row cap cut them;
    errors as the query API words them."""
    try:
        result = session.run(sql, params, timeout_s=timeout_s)
        return result.reader.read_all(), result.truncated
    except QueryTimeout as error:
        raise ApiError(
            "timeout", f"query timed out in expression evaluation: {error}", 503
        ) from None
    except Refused as error:
        raise ApiError("execution", str(error), 403) from None
    except UserError as error:
        raise ApiError("execution", _message(str(error)), 422) from None


def _native_answer(
    server: Server, user: User, compiled: Compiled, timeout_s: float | None
) -> bytes | None:
    """The fast path's answer (`warehouse.promql.native`), its statements run in one session
    of `user` (the same role checks as the SQL route, which reads the same tables), within
    the same time limit; None where the SQL route must answer."""
    assert compiled.native is not None
    session = server.session(user, face="promql")
    limit_s = min(timeout_s, session.timeout_s) if timeout_s else session.timeout_s
    deadline = time.monotonic() + limit_s

    def check() -> None:
        if session.interrupted is not None:
            raise ApiError("execution", str(session.interrupted), 422)
        if time.monotonic() > deadline:
            why = f"the query ran past its time limit of {limit_s:g} s and was stopped"
            raise ApiError("timeout", f"query timed out in expression evaluation: {why}", 503)

    def tables(sql: str, params: dict[str, Any]) -> pa.Table:
        check()
        table, truncated = _table(session, sql, max(deadline - time.monotonic(), 0.001), params)
        if truncated:  # a row cap on every format: the SQL route answers
            raise native.Fallback
        return table

    try:
        with session.turn():
            return native.answer(
                compiled.native, tables, check, max_series=server.core.limits.max_rows_json
            )
    finally:
        session.close()


def _message(text: str) -> str:
    """DuckDB's text for an error PromQL raised (`error('...')`) without its class name."""
    for prefix in ("Invalid Input Error: ", "Binder Error: "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _answer(server: Server, user: User, compiled: Compiled, timeout_s: float | None) -> Any:
    if compiled.native is not None:
        found = _native_answer(server, user, compiled, timeout_s)
        if found is not None:
            return found
    return render.answer(compiled, lambda sql: run_rows(server, user, sql, timeout_s))


async def _handle(request: Request, work: Any, *args: Any) -> Response:
    try:
        given = await params(request)
        return envelope(await work(request, given, *args))
    except ApiError as error:
        return failure(error)
    except PromQLError as error:
        return failure(ApiError(error.kind, str(error), 400 if error.kind == "bad_data" else 422))


def _user(request: Request) -> User:
    user: User = request.state.promql_user
    return user


async def _query(request: Request, given: dict[str, list[str]]) -> Any:
    expression = one(given, "query")
    if not expression:
        raise bad('invalid parameter "query": the query is empty')
    at = time_ms(one(given, "time"), "time", int(time.time() * 1000))
    compiled = evaluate.instant(expression, at)
    server = request.app.state.server
    return await off_loop(request, _answer, server, _user(request), compiled, _timeout_s(given))


async def _query_range(request: Request, given: dict[str, list[str]]) -> Any:
    expression = one(given, "query")
    if not expression:
        raise bad('invalid parameter "query": the query is empty')
    for name in ("start", "end", "step"):
        if not one(given, name):
            raise bad(f'invalid parameter "{name}": missing')
    start = time_ms(one(given, "start"), "start", 0)
    end = time_ms(one(given, "end"), "end", 0)
    step = duration_ms(one(given, "step") or "", "step")
    compiled = evaluate.range_query(expression, start, end, step)  # a bad query fails here
    server = request.app.state.server
    user, timeout_s = _user(request), _timeout_s(given)
    cache = server.promql_cache
    if not cache.offset_ms or not result_cache.cacheable(expression):
        return await off_loop(request, _answer, server, user, compiled, timeout_s)

    def steps(lo: int, hi: int) -> Any:
        part = (
            compiled if (lo, hi) == (start, end) else evaluate.range_query(expression, lo, hi, step)
        )
        return _answer(server, user, part, timeout_s)

    key = (user.name, user.role, expression)
    return await off_loop(request, cache.range_answer, key, start, end, step, steps)


def _window(given: dict[str, list[str]]) -> tuple[int, int]:
    return time_ms(one(given, "start"), "start", MIN_MS), time_ms(one(given, "end"), "end", MAX_MS)


def _catalog_rows(request: Request, sql: str) -> Any:
    return off_loop(request, run_rows, request.app.state.server, _user(request), sql, None)


async def _series(request: Request, given: dict[str, list[str]]) -> Any:
    matches = given.get("match[]", [])
    if not matches:
        raise bad("no match[] parameter provided")
    rows = await _catalog_rows(request, catalog.series(matches, *_window(given)))
    return [render.labels(labels) for (labels,) in rows]


async def _labels(request: Request, given: dict[str, list[str]]) -> Any:
    sql = catalog.label_names(given.get("match[]", []), *_window(given))
    return [name for (name,) in await _catalog_rows(request, sql)]


async def _label_values(request: Request, given: dict[str, list[str]], name: str) -> Any:
    sql = catalog.label_values(name, given.get("match[]", []), *_window(given))
    return [value for (value,) in await _catalog_rows(request, sql)]


async def _metadata(request: Request, given: dict[str, list[str]]) -> Any:
    metric = one(given, "metric")
    sql = catalog.label_values(
        "__name__", [f"{{__name__={metric!r}}}"] if metric else [], MIN_MS, MAX_MS
    )
    names = [value for (value,) in await _catalog_rows(request, sql)]
    return {
        n: [{"type": "gauge" if n.startswith("DCGM_") else "unknown", "help": "", "unit": ""}]
        for n in names
    }


async def _format(request: Request, given: dict[str, list[str]]) -> Any:
    expression = one(given, "query") or ""
    return translate.parse(expression).prettify()


def _route(path: str, work: Any, summary: str) -> None:
    async def endpoint(request: Request, user: Annotated[User, Depends(current_user)]) -> Any:
        request.state.promql_user = user
        return await _handle(request, work)

    endpoint.__name__ = "prom_" + path.strip("/").replace("/", "_")
    router.add_api_route(path, endpoint, methods=["GET", "POST"], summary=summary)


_route("/api/v1/query", _query, "PromQL at an instant")
_route("/api/v1/query_range", _query_range, "PromQL over a range of steps")
_route("/api/v1/series", _series, "The series match[] selects")
_route("/api/v1/labels", _labels, "Label names")
_route("/api/v1/metadata", _metadata, "Metric metadata")
_route("/api/v1/format_query", _format, "A PromQL expression, formatted")


@router.api_route("/api/v1/label/{name}/values", methods=["GET"], summary="A label's values")
async def prom_label_values(
    name: str, request: Request, user: Annotated[User, Depends(current_user)]
) -> Any:
    request.state.promql_user = user
    return await _handle(request, _label_values, name)


@router.get("/api/v1/status/buildinfo", summary="Build information (as Prometheus 2.42)")
async def prom_buildinfo(user: Annotated[User, Depends(current_user)]) -> Any:
    """Grafana reads `version` to pick the query features it uses: wanka answers as 2.42."""
    return envelope({"version": "2.42.0", "revision": f"wanka-{_version()}", "branch": "wanka",
                     "buildUser": "wanka", "buildDate": "", "goVersion": "none"})  # fmt: skip


def _version() -> str:
    try:
        return metadata.version("wanka")
    except metadata.PackageNotFoundError:
        return "dev"


@router.get("/api/v1/query_exemplars", summary="Exemplars (wanka stores none)")
async def prom_exemplars(user: Annotated[User, Depends(current_user)]) -> Any:
    return envelope([])
