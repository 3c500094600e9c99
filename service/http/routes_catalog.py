"""Tables, dynamic tables, health and metrics: thin reads of `warehouse.query.describe`."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import pyarrow as pa
from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse

from service.http.auth import current_user
from service.http.models import DynamicTable, Error, Health, RefreshOutcome, Table
from service.serve.metric_families import (
    ARROW_MEMORY,
    DUCKDB_MEMORY,
    DYNAMIC_TABLE_LAG,
    DYNAMIC_TABLE_TARGET,
    EVICTION_NODES,
    PYTHON_BLOCKS,
    RESIDENT_MEMORY,
)
from service.serve.metrics import Gauges
from service.serve.server import Server
from warehouse.dynamic import schedule
from warehouse.dynamic.schedule import Failed, Skipped
from warehouse.dynamic.schedule import describe as describe_outcome
from warehouse.health import findings
from warehouse.jobs import stats
from warehouse.query import describe
from warehouse.security.users import User

router = APIRouter()
AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Error, "description": "No or wrong credentials."}
}


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


@router.get("/v1/tables", tags=["catalog"], responses=AUTH_ERRORS)
def tables(request: Request, user: Annotated[User, Depends(current_user)]) -> list[Table]:
    """Every table and view: name, kind, estimated rows, columns and types."""
    return [Table(**t) for t in _server(request).with_cursor(describe.list_tables)]


@router.get(
    "/v1/tables/{name}",
    tags=["catalog"],
    responses={**AUTH_ERRORS, 404: {"model": Error, "description": "No such table."}},
)
def table(name: str, request: Request, user: Annotated[User, Depends(current_user)]) -> Table:
    """One table: columns, types and exact row count."""
    return Table(**_server(request).with_cursor(lambda cur: describe.describe_table(cur, name)))


@router.get("/v1/dynamic-tables", tags=["dynamic tables"], responses=AUTH_ERRORS)
def dynamic_tables(
    request: Request, user: Annotated[User, Depends(current_user)]
) -> list[DynamicTable]:
    """Each dynamic table: freshness, refresh mode and why, state, lag."""
    return [DynamicTable(**t) for t in _server(request).with_cursor(describe.list_dynamic_tables)]


@router.post(
    "/v1/dynamic-tables/{name}/refresh",
    tags=["dynamic tables"],
    responses={
        **AUTH_ERRORS,
        403: {"model": Error, "description": "Refreshing needs the writer role."},
        404: {"model": Error, "description": "No such dynamic table."},
    },
)
def refresh(
    name: str,
    request: Request,
    user: Annotated[User, Depends(current_user)],
    full: bool = False,
) -> list[RefreshOutcome]:
    """Refresh one dynamic table now, after the dynamic tables it reads (incrementally where
    each plan allows; `full` recomputes the named one): one outcome per table, upstream first."""
    server = _server(request)
    known = {t["name"] for t in server.with_cursor(describe.list_dynamic_tables)}
    if name not in known:
        raise LookupError(f"no dynamic table named {name!r}")
    outcomes = server.refresh(user, name, full=full)
    return [
        RefreshOutcome(
            name=o.name,
            outcome="failed"
            if isinstance(o, Failed)
            else "skipped"
            if isinstance(o, Skipped)
            else "refreshed",
            detail=describe_outcome(o, took),
        )
        for o, took in outcomes
    ]


@router.get("/healthz", tags=["service"])
def healthz(request: Request) -> Health:
    """Liveness: answers without credentials once the database is open."""
    server = _server(request)
    return Health(
        status="ok",
        database=server.engine.path,
        schema_version=server.schema_version,
        pgwire=bool(getattr(request.app.state, "pgwire", False)),
    )


def resident_bytes() -> float | None:
    """This process's resident set size (Linux /proc), None where there is no /proc."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _freshness_targets(cur: Any) -> dict[str, float]:
    """Each dynamic table's freshness target in seconds ('downstream' ones have none)."""
    return {n: e.freshness_s for n, e in schedule.entries(cur).items() if e.freshness_s}


def _readings(
    cur: Any,
) -> tuple[dict[str, float], dict[str, float], dict[str, int], dict[str, tuple[int, int]]]:
    """What /metrics reads from the database, on one cursor: each dynamic table's lag and
    freshness target, DuckDB's buffer memory by tag and its eviction queues."""
    return (
        describe.refresh_lag_s(cur),
        _freshness_targets(cur),
        describe.duckdb_memory(cur),
        describe.duckdb_eviction_queues(cur),
    )


@router.get("/metrics", tags=["service"], response_class=PlainTextResponse)
def metrics(request: Request) -> PlainTextResponse:
    """Prometheus text: queries, errors, latencies, ingest rows, refresh lag per dynamic table."""
    server = _server(request)
    lag, targets, duckdb_memory, queues = server.with_cursor(_readings)
    pool = pa.default_memory_pool()
    gauges: Gauges = {
        DYNAMIC_TABLE_LAG: {(("table", str(name)),): float(value) for name, value in lag.items()},
        DYNAMIC_TABLE_TARGET: {(("table", name),): value for name, value in targets.items()},
        DUCKDB_MEMORY: {(("tag", tag),): float(used) for tag, used in duckdb_memory.items()},
        EVICTION_NODES: {
            (("queue", kind), ("state", state)): float(count)
            for kind, (nodes, dead) in queues.items()
            for state, count in (("alive", nodes - dead), ("dead", dead))
        },
        PYTHON_BLOCKS: {(): float(sys.getallocatedblocks())},
        ARROW_MEMORY: {(("pool", pool.backend_name),): float(pool.bytes_allocated())},
    }
    gauges.update(server.gauges())
    rss = resident_bytes()
    if rss is not None:
        gauges[RESIDENT_MEMORY] = {(): rss}
    return PlainTextResponse(
        server.metrics.render(gauges), media_type="text/plain; version=0.0.4; charset=utf-8"
    )


@router.get(
    "/v1/jobs/{job_id}/stats",
    tags=["jobs"],
    responses={**AUTH_ERRORS, 404: {"model": Error, "description": "No such job."}},
)
def job_stats(
    job_id: str, request: Request, user: Annotated[User, Depends(current_user)]
) -> dict[str, Any]:
    """One job's GPU efficiency (`wanka jobstats JOB_ID --format json`): its facts, each GPU's
    utilisation, memory and power, the attribution sources and the efficiency notes."""
    return _server(request).with_cursor(lambda cur: stats.stats(cur, job_id))


@router.get("/v1/health", tags=["health"], responses={**AUTH_ERRORS})
def gpu_health(request: Request, user: Annotated[User, Depends(current_user)]) -> dict[str, Any]:
    """Which GPUs and nodes to watch, drain or replace (`wanka health --format json`): per GPU
    its state, the rules that fired with their evidence; per node the worst of its GPUs."""
    return _server(request).with_cursor(findings.report)
