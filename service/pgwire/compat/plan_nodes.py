"""PostgreSQL plan nodes as `compat.plan` builds them, and the cost model's constants and
column widths (PostgreSQL's defaults: `seq_page_cost`, `cpu_tuple_cost`, `cpu_operator_cost`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEQ_PAGE_COST = 1.0
CPU_TUPLE_COST = 0.01
CPU_OPERATOR_COST = 0.0025
PAGE_BYTES = 8192
DEFAULT_WIDTH = 32  # text, blobs, lists: PostgreSQL's guess for a variable-width column

_FIXED_WIDTHS = {
    "BOOLEAN": 1,
    "TINYINT": 2,
    "SMALLINT": 2,
    "UTINYINT": 2,
    "USMALLINT": 4,
    "INTEGER": 4,
    "UINTEGER": 8,
    "BIGINT": 8,
    "UBIGINT": 8,
    "HUGEINT": 16,
    "UHUGEINT": 16,
    "FLOAT": 4,
    "DOUBLE": 8,
    "DATE": 4,
    "TIME": 8,
    "TIMESTAMP": 8,
    "TIMESTAMP WITH TIME ZONE": 8,
    "TIMESTAMP_NS": 8,
    "TIMESTAMP_MS": 8,
    "TIMESTAMP_S": 8,
    "INTERVAL": 16,
    "UUID": 16,
}


def type_width(duckdb_type: str) -> int:
    """PostgreSQL's byte width for a DuckDB column type.

    >>> type_width("INTEGER"), type_width("DECIMAL(12,3)"), type_width("VARCHAR")
    (4, 8, 32)
    """
    name = duckdb_type.upper()
    if name.startswith("DECIMAL"):
        return 8
    return _FIXED_WIDTHS.get(name, DEFAULT_WIDTH)


@dataclass(frozen=True)
class Table:
    """What the cost model knows of a scanned table: its column widths and row count."""

    widths: Mapping[str, int]
    rows: int


@dataclass
class Actual:
    """What EXPLAIN ANALYZE measured for a node: inclusive milliseconds and rows."""

    startup_ms: float
    total_ms: float
    rows: int
    removed: int | None = None  # rows a folded filter dropped


@dataclass
class Node:
    """One PostgreSQL plan node."""

    node_type: str
    rows: float
    width: int
    startup: float
    total: float
    props: dict[str, Any] = field(default_factory=dict)  # before the costs: Relation Name ...
    details: list[tuple[str, Any]] = field(default_factory=list)  # after: Filter, Hash Cond ...
    children: list[Node] = field(default_factory=list)
    relationship: str = "Outer"
    actual: Actual | None = None
    label: str = ""  # the text format's name, when it is not the node type ("HashAggregate")
    self_ms: float = 0.0  # ANALYZE: DuckDB's time in this node and in the nodes folded into it
    columns: list[str] = field(default_factory=list)  # what DuckDB's #0, #1 ... above refer to
