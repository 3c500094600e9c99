"""`wanka sql`: run SQL, render the result in the format asked for."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

import click
import duckdb
import pyarrow as pa

from service import render, terminal
from service.commands.common import open_engine
from warehouse.errors import UserError
from warehouse.query import execute, sql_error


@click.command()
@click.argument("query")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(render.FORMATS),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to FILE instead of stdout.",
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Rows shown by --format table.",
)
@click.pass_context
def sql(ctx: click.Context, query: str, fmt: str, output: Path | None, max_rows: int) -> None:
    """Run SQL against the warehouse and print the result. QUERY '-' reads it from stdin."""
    text = sys.stdin.read() if query == "-" else query
    check_binary_target(fmt, output)
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            emit(execute(cur, text), fmt, output, max_rows)
        finally:
            cur.close()


def check_binary_target(fmt: str, output: Path | None) -> None:
    """Refuse to write a binary format to a terminal."""
    if fmt in render.BINARY_FORMATS and output is None and sys.stdout.isatty():
        raise UserError(f"--format {fmt} is binary: pass --output FILE or pipe it")


def emit(reader: pa.RecordBatchReader, fmt: str, output: Path | None, max_rows: int) -> None:
    """Render a result as `wanka sql` does (a table for people, else a renderer), then close it."""
    try:
        if fmt == "table" and output is None:
            terminal.print_table(reader, max_rows=max_rows)
            return
        writer = render.WRITERS["csv" if fmt == "table" else fmt]
        if output is None:
            writer(reader, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            with _create(output) as handle:
                writer(reader, handle)
    except duckdb.Error as error:  # raised while streaming rows
        raise sql_error(error) from None
    finally:
        reader.close()


def _create(path: Path) -> IO[bytes]:
    try:
        return path.open("wb")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror}") from None
