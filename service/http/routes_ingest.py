"""`POST /v1/ingest/{format}`: the CLI's readers and batch semantics over HTTP.

The body is the file itself (any content type but multipart), or a multipart form whose file
parts are each one source. Each source is one batch and one transaction; the same bytes twice
are a no-op unless `force`.
"""

from __future__ import annotations

import tempfile
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from service.commands.common import read_options
from service.http.auth import current_user
from service.http.models import Error, IngestResult
from service.serve.server import Server
from warehouse.errors import UserError
from warehouse.ingest.batch import format_named
from warehouse.security.users import User

router = APIRouter(tags=["ingest"])


class TooLarge(UserError):
    """A request body over the server's upload limit (HTTP 413)."""


@router.post(
    "/v1/ingest/{fmt}",
    responses={
        400: {"model": Error, "description": "Unknown format or unreadable input."},
        401: {"model": Error, "description": "No or wrong credentials."},
        403: {"model": Error, "description": "Ingest needs the writer role."},
        413: {"model": Error, "description": "The body is over the upload limit."},
    },
    openapi_extra={
        "requestBody": {
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "file": {
                                "type": "array",
                                "items": {"type": "string", "format": "binary"},
                            }
                        },
                    }
                },
            }
        }
    },
)
async def ingest(
    fmt: str,
    request: Request,
    user: Annotated[User, Depends(current_user)],
    name: Annotated[str | None, Query(max_length=1000)] = None,
    force: bool = False,
    table: str | None = None,
    host: str | None = None,
    cluster: str | None = None,
    at: str | None = None,
    columns: str | None = None,
    trace_start: str | None = None,
    tz: str = "UTC",
    collective: str | None = None,
) -> list[IngestResult]:
    """Ingest the body (or each multipart file) in FORMAT: dcgm, nvidia-smi, sacct, scontrol,
    pods, nccl-tests, inventory, parquet, csv."""
    server: Server = request.app.state.server
    server.require(user, "writer", "ingest")
    format_named(fmt)  # an unknown format is a 400 before any byte is read
    options = read_options(
        str,  # the query parameters are spelled as the fields are
        at=at,
        host=host,
        cluster=cluster,
        columns=columns,
        trace_start=trace_start,
        table=table,
        timezone=tz,
        collective=collective,
    )
    limit = server.limits.max_upload_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the body is {int(declared):,} bytes; the limit is {limit:,}")
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form(max_part_size=limit)
        try:
            uploads: list[tuple[str, Any]] = [
                (value.filename or f"upload.{fmt}", value.file)
                for _, value in form.multi_items()
                if isinstance(value, UploadFile)
            ]
            if not uploads:
                raise UserError("the multipart body holds no file")
            results = await run_in_threadpool(
                server.ingest, user, fmt, uploads, options, force=force
            )
        finally:
            await form.close()
    else:
        with tempfile.SpooledTemporaryFile(max_size=16 << 20) as spooled:
            total = 0
            async for chunk in request.stream():
                total += len(chunk)
                if total > limit:
                    raise TooLarge(f"the body is over the upload limit of {limit:,} bytes")
                spooled.write(chunk)
            spooled.seek(0)
            uploads = [(name or f"upload.{fmt}", spooled)]
            results = await run_in_threadpool(
                server.ingest, user, fmt, uploads, options, force=force
            )
    return [
        IngestResult(
            source=r.source,
            format=r.format,
            batch_id=r.batch_id,
            rows=r.rows,
            rejected=r.rejected,
            duplicate_of=r.duplicate_of,
            seconds=r.seconds,
            first_reject=r.first_reject.reason if r.first_reject else None,
        )
        for r in results
    ]
