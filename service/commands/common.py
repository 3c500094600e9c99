"""What every command shares: the global options, opening the database, parsing times."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from warehouse.errors import UserError
from warehouse.kernel.engine import Engine

if TYPE_CHECKING:
    from warehouse.ingest import ReadOptions

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Globals:
    """Options given before the command (`wanka --db PATH COMMAND`)."""

    db: str | None


def open_engine(ctx: click.Context, *, read_only: bool = False) -> Engine:
    """The database the global options name, open and up to date (with the shipped dynamic
    tables it was never given, when it is opened to write)."""
    from warehouse.dynamic.shipped import ensure_shipped

    engine = Engine(ctx.obj.db, read_only=read_only)
    if not read_only:
        try:
            ensure_shipped(engine)
        except BaseException:
            engine.close()
            raise
    return engine


def parse_time(option: str, value: str | None) -> datetime | None:
    """An ISO 8601 time given to `option`; a time without a zone is UTC."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"{option} {value!r} is not an ISO 8601 time like 2026-11-01T00:00:00Z"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def read_options(
    spell: Callable[[str], str],
    *,
    at: str | None = None,
    host: str | None = None,
    cluster: str | None = None,
    columns: str | None = None,
    trace_start: str | None = None,
    table: str | None = None,
    timezone: str = "UTC",
    collective: str | None = None,
) -> ReadOptions:
    """The reader options given as text to `wanka ingest` or `POST /v1/ingest/{format}`.

    Both faces take the same options; `spell` names a field the way the face spells it
    (`trace_start` is `--trace-start` on the command line), so an error names the option the
    person typed.
    """
    from warehouse.ingest import ReadOptions  # lazily: the CLI starts without the readers

    return ReadOptions(
        at=parse_time(spell("at"), at),
        host=host,
        cluster=cluster,
        columns=tuple(c.strip() for c in columns.split(",")) if columns else None,
        trace_start=parse_time(spell("trace_start"), trace_start),
        table=table,
        timezone=timezone,
        collective=collective,
    )


def shared_data() -> Path:
    """`$WANKA_SHARED_DATA`, else the shared/data folder beside this checkout."""
    found = os.environ.get("WANKA_SHARED_DATA")
    return Path(found) if found else Path(__file__).resolve().parents[3] / "shared" / "data"


def with_options(command: F, options: Sequence[Callable[[F], F]]) -> F:
    """`command` decorated by each of `options`, shown in `--help` in the order given."""
    for option in reversed(options):
        command = option(command)
    return command


def output_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--format/-f`, `--output/-o` and `--max-rows`: how a command that prints rows prints them."""
    from service import render

    options = (
        click.option(
            "--format",
            "-f",
            "fmt",
            type=click.Choice(render.FORMATS),
            default="table",
            show_default=True,
            help="Output format.",
        ),
        click.option(
            "--output",
            "-o",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Write to FILE instead of stdout.",
        ),
        click.option(
            "--max-rows",
            type=click.IntRange(min=1),
            default=200,
            show_default=True,
            help="Rows shown by --format table.",
        ),
    )
    return with_options(command, options)


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class Duration(click.ParamType[float]):
    """A Prometheus-style duration (`500ms`, `15s`, `1m30s`, `2h`) or plain seconds, in seconds.

    >>> Duration().convert("1m30s", None, None), Duration().convert("0.5", None, None)
    (90.0, 0.5)
    """

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip()
        try:
            return float(text)
        except ValueError:
            pass
        parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)", text)
        if not parts or "".join(n + u for n, u in parts) != text:
            self.fail(f"{value!r} is not a duration like 15s, 1m30s or 500ms", param, ctx)
        return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def report_format(what: str) -> Callable[[F], F]:
    """`--format table|json` of a command that prints a report: text, or `what` as JSON."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help=f"A text report, or {what} as JSON.",
    )


def echo_report(found: dict[str, Any], render: Callable[[dict[str, Any]], str], fmt: str) -> None:
    """Print a report in the `--format` asked for."""
    click.echo(json.dumps(found, indent=2) if fmt == "json" else render(found))
