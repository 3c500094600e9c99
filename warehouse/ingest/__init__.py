"""Ingest: read the field's real file formats into the base tables, exactly once.

    results = ingest(engine, "dcgm", ["scrape.prom", "dir/"], ReadOptions())

is what the CLI and the HTTP service both call. Each source is one batch and one transaction
(see `batch.py`); each format is one module registered in `formats.py`.
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
