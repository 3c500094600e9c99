"""What a person at a terminal sees: result tables and progress bars (quiet when piped)."""

from __future__ import annotations

import decimal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from service.render import json_value

stderr = Console(stderr=True, highlight=False)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, decimal.Decimal):
        return str(value)
    shown = json_value(value)
    return str(shown)


def print_table(reader: pa.RecordBatchReader, max_rows: int = 200) -> int:
    """Print up to `max_rows` rows as a table; count (and drop) the rest. Returns all rows."""
    # Piped, a table is still for people: give it room instead of rich's 80-column default.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 240)
    table = Table(show_lines=False, header_style="bold")
    for field in reader.schema:
        numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
        table.add_column(
            f"{field.name}\n[dim]{field.type}[/dim]", justify="right" if numeric else "left"
        )
    total = 0
    for batch in reader:
        take = max(0, min(batch.num_rows, max_rows - total))
        if take:
            columns = [col.to_pylist() for col in batch.slice(0, take).columns]
            for values in zip(*columns, strict=True):
                table.add_row(*(_cell(v) for v in values))
        total += batch.num_rows
    if reader.schema.names:
        console.print(table)
    shown = min(total, max_rows)
    note = f"{total} row{'s' if total != 1 else ''}"
    if shown < total:
        note += f" ({shown} shown; --format csv or --output FILE for all)"
    stderr.print(f"[dim]{note}[/dim]")
    return total


@contextmanager
def progress(description: str, total: int | None, *, cumulative: bool = False) -> Iterator[Any]:
    """A progress bar on a terminal; a no-op when stderr is not a terminal.

    Yields a callback taking the work done since the last call (or with `cumulative`, the work
    done so far) and, when it becomes known, the total.
    """
    if not sys.stderr.isatty():
        yield lambda n, total=None: None
        return
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=stderr, transient=True) as bar:
        task = bar.add_task(description, total=total)

        def report(n: int, total: int | None = None) -> None:
            if total is not None:
                bar.update(task, total=total)
            if cumulative:
                bar.update(task, completed=n)
            else:
                bar.advance(task, n)

        yield report
