"""`POST /api/v1/write`: Prometheus Remote-Write 1.0 into gpu_metrics and prom_samples.

As the spec (prometheus/docs `docs/specs/prw/remote_write_spec.md`) says a receiver answers:
204 once stored; 400 for a body that can never be stored (not snappy, not a WriteRequest,
invalid labels, timestamps out of the accepted window: Prometheus drops it, no retry); 401 /
403 for credentials and role (Basic or Bearer, the writer role); 413 for a body over the cap;
415 for another content type or encoding (Remote-Write 2.0's `proto=io.prometheus.write.v2.
Request` among them: not supported); 503 with Retry-After when the database is busy, which
Prometheus retries. A retried request whose samples are stored already is answered 204 and
stores nothing (warehouse/tsdb/dedupe.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service.http.auth import current_user
from service.http.models import Error
from service.serve.server import Server
from service.serve.writes import WriterBusy
from warehouse.security.users import User

router = APIRouter(tags=["prometheus"])

#: The most bytes a (compressed) body may have; Prometheus sends a few hundred KB at most.
MAX_BODY_BYTES = 32 << 20
V2 = "io.prometheus.write.v2.request"


def _refuse(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


@router.post(
    "/api/v1/write",
    status_code=204,
    responses={
        400: {"model": Error, "description": "Malformed; Prometheus will not retry it."},
        401: {"model": Error, "description": "No or wrong credentials."},
        403: {"model": Error, "description": "Writing needs the writer role."},
        413: {"model": Error, "description": "The body is over the cap."},
        415: {"model": Error, "description": "Not snappy-compressed protobuf (Remote-Write 1.0)."},
        503: {"model": Error, "description": "Busy: retry (Retry-After)."},
    },
)
async def remote_write(request: Request, user: Annotated[User, Depends(current_user)]) -> Response:
    """Store a Prometheus Remote-Write 1.0 request (snappy-compressed protobuf WriteRequest)."""
    server: Server = request.app.state.server
    server.require(user, "writer", "remote_write")
    kind = request.headers.get("content-type", "").lower()
    if V2 in kind.replace(" ", ""):
        return _refuse(415, "Remote-Write 2.0 is not supported: send Remote-Write 1.0")
    if not kind.startswith("application/x-protobuf"):
        return _refuse(415, f"content type {kind or '(none)'!r}: expected application/x-protobuf")
    encoding = request.headers.get("content-encoding", "").lower()
    if encoding != "snappy":
        return _refuse(415, f"content encoding {encoding or '(none)'!r}: expected snappy")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _refuse(413, f"the body is {int(declared):,} bytes; the cap is {MAX_BODY_BYTES:,}")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > MAX_BODY_BYTES:
            return _refuse(413, f"the body is over the cap of {MAX_BODY_BYTES:,} bytes")
        chunks.append(chunk)
    try:
        sender = (request.client.host, request.client.port) if request.client else None
        await run_in_threadpool(server.remote_write, user, b"".join(chunks), sender)
    except WriterBusy as busy:
        return _refuse(503, str(busy), {"Retry-After": "1"})
    return Response(status_code=204)
