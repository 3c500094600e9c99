"""What every reader shares: its input, its options, and what it hands back.

A reader turns one source (a file, stdin, an upload) into chunks of Arrow rows for one or more
tables, plus the lines it could not read. It never touches the database: `batch.py` does that,
so that every format gets the same transaction, dedupe and reject handling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

import pyarrow as pa

from warehouse.errors import UserError


@dataclass(frozen=True)
class Reject:
    """A line that could not be read, kept whole with the reason."""

    line: int | None
    reason: str
    raw: str | None = None
    field: str | None = None


@dataclass
class Parsed:
    """One chunk of a reader's output: rows for `table` and the rejects met on the way."""

    table: str
    rows: pa.Table
    rejects: list[Reject] = field(default_factory=list)


@dataclass(frozen=True)
class Source:
    """One input. `path` is a local file to read (stdin and uploads are spooled to one)."""

    name: str
    path: Path
    mtime: datetime | None = None
    spooled: bool = False  # `path` is a temporary copy wanka made, removed after the ingest


@dataclass(frozen=True)
class ReadOptions:
    """Options a person may pass to `wanka ingest`; each reader uses the ones it knows.

    Attributes:
        at: scrape time for DCGM samples without a timestamp (overrides the line's timestamp).
        host: host name when the input does not carry one (nvidia-smi without `hostname`).
        cluster: cluster the rows belong to, where the format does not say.
        columns: sacct field names for output without a header line.
        trace_start: the wall-clock time that relative trace times count from (pods).
        table: target table for `csv` and `parquet`.
        timezone: zone of times written without one (sacct prints local time).
        collective: nccl-tests collective when the output does not say.
    """

    at: datetime | None = None
    host: str | None = None
    cluster: str | None = None
    columns: tuple[str, ...] | None = None
    trace_start: datetime | None = None
    table: str | None = None
    timezone: str = "UTC"
    collective: str | None = None


@dataclass(frozen=True)
class ReadContext:
    """What a reader may need to know about the warehouse, without holding a connection."""

    schemas: dict[str, pa.Schema]  # table name -> Arrow schema from its DDL
    model_names: dict[str, str]  # full device name (nvidia-smi / DCGM modelName) -> short model

    def schema(self, table: str) -> pa.Schema:
        try:
            return self.schemas[table]
        except KeyError:
            raise UserError(f"no table {table!r} to load into") from None


class Reader(Protocol):
    def __call__(
        self, stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
    ) -> Iterator[Parsed]: ...


@dataclass(frozen=True)
class Format:
    """An input format: its name, what it reads, and what a person should expect it to be."""

    name: str
    read: Reader
    expected: str  # e.g. "DCGM exporter Prometheus text"
    binary: bool = False  # binary input is expected (Parquet), so no text sniffing


#: Filled by `warehouse.ingest.formats`: name -> Format.
FORMATS: dict[str, Format] = {}


def register(name: str, expected: str, *, binary: bool = False) -> Callable[[Reader], Reader]:
    """Decorator: make a reader available as `wanka ingest NAME`."""

    def add(read: Reader) -> Reader:
        FORMATS[name] = Format(name, read, expected, binary)
        return read

    return add
