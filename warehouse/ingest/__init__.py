"""Ingest: read the field's real file formats into the base tables, exactly once.

    results = ingest(engine, "dcgm", ["scrape.prom", "dir/"], ReadOptions())

is what the CLI and the HTTP service both call. One module per input format (`dcgm`,
`nvidia_smi`, `sacct`, `scontrol`, `pods`, `nccl`, `tabular` for inventory/CSV/Parquet, `traces`
for the published Philly and Alibaba traces on `csvtrace`), each registered in `formats.py` and
each a reader that turns a byte stream into chunks of Arrow rows for named tables plus the lines
it could not read (`base.Reject`). Readers never touch the database: `batch.py` does, the same
way for every format — one source is one batch and one transaction: a batch id from
`wanka.batch_seq` on every row, rows that replace older ones by key (`nodes.host`,
`jobs.job_id`, ...), rejects kept in `wanka.ingest_rejects`, the batch recorded in
`wanka.ingest_batches` with the content's sha256 (the same bytes with the same options again are
a no-op). `sources.py` expands files, folders and stdin and opens them (gzip, binary sniffing,
hashing while reading); `typed.py` checks text against the DDL's types with DuckDB's own
`TRY_CAST`. The text parsers are vectorised (numpy, polars): Python runs once per distinct label
set, host list or TRES string, not per line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

from warehouse.ingest import sources
from warehouse.ingest.base import FORMATS, ReadOptions, Reject, Source
from warehouse.ingest.batch import IngestResult, format_named, ingest_source, read_context
from warehouse.kernel.engine import Engine

__all__ = [
    "FORMATS",
    "IngestResult",
    "ReadOptions",
    "Reject",
    "Source",
    "ingest",
    "ingest_stream",
]


def ingest(
    engine: Engine,
    format_name: str,
    paths: list[str],
    options: ReadOptions | None = None,
    *,
    force: bool = False,
    stdin: BinaryIO | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[IngestResult]:
    """Ingest files, folders or `-` (stdin); one batch per source, in the order given.

    Every source is checked before any is read, so a missing file stores nothing at all.
    """
    fmt = format_named(format_name)
    found = sources.collect(paths, stdin=stdin)
    context = read_context(engine)
    results = []
    try:
        for source in found:
            results.append(
                ingest_source(
                    engine,
                    fmt,
                    source,
                    options or ReadOptions(),
                    context,
                    force=force,
                    progress=progress,
                )
            )
    finally:
        for source in found:
            sources.release(source)
    return results


def ingest_stream(
    engine: Engine,
    format_name: str,
    stream: BinaryIO,
    name: str,
    options: ReadOptions | None = None,
    *,
    force: bool = False,
) -> IngestResult:
    """Ingest one stream (an HTTP upload, a pipe) under `name`."""
    fmt = format_named(format_name)
    source = sources.spool(stream, name)
    try:
        return ingest_source(
            engine, fmt, source, options or ReadOptions(), read_context(engine), force=force
        )
    finally:
        sources.release(source)
