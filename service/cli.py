"""`wanka`: the command line. Thin: parse arguments, call the warehouse, render the result.

The group and its global options live here; each family of subcommands has a module in
`service/commands/`.
"""

from __future__ import annotations

import sys

import click
import duckdb

from service.commands.analyze import analyze
from service.commands.cluster import demo, simulate
from service.commands.common import Globals
from service.commands.health import health
from service.commands.ingest import ingest
from service.commands.jobstats import jobstats
from service.commands.lake import export
from service.commands.refresh import refresh
from service.commands.report import report
from service.commands.retention import retention
from service.commands.scrape import scrape
from service.commands.serve import serve
from service.commands.sql import sql
from service.commands.users import token, user
from warehouse.errors import WankaError, one_line, sql_error


@click.group(
    name="wanka",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--db",
    metavar="PATH",
    help="Database file [default: $WANKA_DB, else ./wanka.duckdb].",
)
@click.pass_context
def app(ctx: click.Context, db: str | None) -> None:
    """A SQL warehouse for GPU clusters of thousands to tens of thousands of cards."""
    ctx.obj = Globals(db=db)


for command in (
    sql,
    ingest,
    refresh,
    retention,
    export,
    simulate,
    demo,
    serve,
    user,
    token,
    analyze,
    report,
    health,
    jobstats,
    scrape,
):
    app.add_command(command)


def main() -> None:
    """Console entry point: exit 0 on success, 2 on bad usage or input, 1 otherwise."""
    try:
        code = app(standalone_mode=False)
    except click.UsageError as error:
        _fail(one_line(error.format_message()), 2, hint=error.ctx)
    except click.ClickException as error:
        _fail(one_line(error.format_message()), error.exit_code)
    except click.Abort:
        _fail("aborted", 130)
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(130)
    except WankaError as error:
        _fail(str(error), error.exit_code)
    except duckdb.Error as error:
        _fail(str(sql_error(error)), sql_error(error).exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int, hint: click.Context | None = None) -> None:
    usage = f" (see '{hint.command_path} --help')" if hint is not None else ""
    print(f"wanka: error: {message}{usage}", file=sys.stderr)
    sys.exit(code)
