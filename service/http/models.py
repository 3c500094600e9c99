"""Request and response bodies of the HTTP API, as pydantic models (they make the OpenAPI doc)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Format = Literal["json", "ndjson", "csv", "arrow", "parquet"]


class QueryRequest(BaseModel):
    """A query: SQL, its parameters, the output format and limits (which may only lower the
    server's own)."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(min_length=1, max_length=1_000_000, examples=["SELECT 42 AS answer"])
    params: list[Any] | dict[str, Any] | None = Field(
        default=None, description="Values for `?` (a list) or `$name` (an object) placeholders."
    )
    format: Format = "json"
    max_rows: int | None = Field(default=None, ge=0, le=2**62)
    timeout_s: float | None = Field(default=None, gt=0, le=86_400)
    schema_: str | None = Field(
        default=None,
        alias="schema",
        max_length=1000,
        description="Where unqualified table names are looked up, in order, as PostgreSQL's "
        "search_path: `wanka`, or `wanka, public` (`public` is `main`). Default: `main`.",
        examples=["wanka, public"],
    )


class Column(BaseModel):
    name: str
    type: str


class QueryResponse(BaseModel):
    """The JSON format (other formats stream their own bytes)."""

    columns: list[Column]
    rows: list[list[Any]]
    truncated: bool
    rows_returned: int
    statement: str
    rowcount: int | None = None
    elapsed_ms: float
    error: str | None = Field(default=None, description="Set when the query failed mid-stream.")


class Error(BaseModel):
    """What went wrong; a query's error as PostgreSQL would word it, DuckDB's text as `detail`."""

    error: str
    sqlstate: str | None = Field(default=None, description="PostgreSQL's SQLSTATE, e.g. 42703.")
    position: int | None = Field(
        default=None, description="Where in the SQL sent the error is: characters from 1."
    )
    hint: str | None = None
    detail: str | None = None


class TableColumn(BaseModel):
    name: str
    type: str
    nullable: bool


class Table(BaseModel):
    name: str
    kind: str
    estimated_rows: int | None = None
    rows: int | None = None
    columns: list[TableColumn]


class DynamicTable(BaseModel):
    name: str
    freshness: str | None = None
    refresh_mode: str | None = None
    refresh_mode_reason: str | None = None
    state: str | None = None
    error: str | None = None
    last_refresh_at: str | None = None
    data_timestamp: str | None = None
    lag_s: float | None = None
    definition: str | None = None


class RefreshOutcome(BaseModel):
    name: str
    outcome: str
    detail: str


class IngestResult(BaseModel):
    source: str
    format: str
    batch_id: int | None
    rows: dict[str, int]
    rejected: int
    duplicate_of: int | None
    seconds: float
    first_reject: str | None = None


class Health(BaseModel):
    status: str
    database: str
    schema_version: int
    pgwire: bool
