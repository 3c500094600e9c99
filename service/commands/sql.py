"""`wanka sql`: run SQL, render the result in the format asked for."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

import click
import duckdb
import pyarrow as pa

from service import render, terminal
from service.commands.common import open_engine, output_options
from service.commands.lake import engine_options, open_lake_engine
from service.serve.pgerror import pg_error
from warehouse.engines.portable import NotPortable, portability_problems
from warehouse.errors import UserError, one_line, sql_error
from warehouse.query.executor import execute


@click.command()
@click.argument("query")
@output_options
@engine_options
@click.pass_context
def sql(
    ctx: click.Context,
    query: str,
    fmt: str,
    output: Path | None,
    max_rows: int,
    engine: str,
    lake: Path | None,
    master: str | None,
    remote: str | None,
) -> None:
    """Run SQL against the warehouse and print the result. QUERY '-' reads it from stdin.

    With --lake (and --engine spark) the query runs over the lake's Delta tables instead of
    the database file, written in DuckDB's dialect either way.
    """
    text = sys.stdin.read() if query == "-" else query
    check_binary_target(fmt, output)
    if engine != "duckdb" or lake is not None:
        emit(_on_lake(text, engine, lake, master, remote).to_reader(), fmt, output, max_rows)
        return
    with open_engine(ctx) as engine_:
        cur = engine_.cursor()
        try:
            emit(execute(cur, text), fmt, output, max_rows)
        except UserError as error:  # the SQL's fault: worded as PostgreSQL, DuckDB's text kept
            raise UserError(pg_error(error, text).line()) from None
        finally:
            cur.close()


def _on_lake(
    text: str, engine: str, lake: Path | None, master: str | None, remote: str | None
) -> pa.Table:
    """The query's rows computed by a lake engine (DuckDB or Spark over the Delta tables)."""
    problems = portability_problems(text) if engine == "spark" else []
    if problems:  # said before a Spark session is started, not after
        raise UserError(f"this query does not run the same on {engine}: {'; '.join(problems)}")
    with open_lake_engine(engine, lake, master, remote) as lake_engine:
        assert lake is not None
        lake_engine.register_lake(lake)
        lake_engine.register_udfs()
        try:
            return lake_engine.sql(text)
        except NotPortable as error:
            raise UserError(f"this query does not run the same on {engine}: {error}") from None
        except duckdb.Error as error:
            raise sql_error(error) from None
        except Exception as error:  # Spark's own errors: the first line says what failed
            if type(error).__module__.startswith(("pyspark", "py4j")):
                raise UserError(f"{engine}: {one_line(str(error))}") from None
            raise


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
