"""`wanka`: the command line. Thin: parse arguments, call the warehouse, render the result.

The group and its global options live here; each family of subcommands has a module in
`service/commands/`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import click
import duckdb

from service.commands.common import Globals
from warehouse.errors import WankaError, one_line, sql_error

#: Each command and where it lives, in the order `wanka --help` lists them. A command's module
#: is imported only when it runs (or `--help` lists it): `wanka health` need not load the
#: server, the lake engines or the scraper (0.7 s of a 1 s budget when it imported them all).
COMMANDS = {
    "sql": "service.commands.sql:sql",
    "ingest": "service.commands.ingest:ingest",
    "refresh": "service.commands.refresh:refresh",
    "retention": "service.commands.retention:retention",
    "compact": "service.commands.compact:compact",
    "export": "service.commands.lake:export",
    "simulate": "service.commands.cluster:simulate",
    "demo": "service.commands.cluster:demo",
    "serve": "service.commands.serve:serve",
    "check": "service.commands.check:check",
    "test": "service.commands.rules:test",
    "user": "service.commands.users:user",
    "token": "service.commands.users:token",
    "analyze": "service.commands.analyze:analyze",
    "report": "service.commands.report:report",
    "health": "service.commands.health:health",
    "jobstats": "service.commands.jobstats:jobstats",
    "scrape": "service.commands.scrape:scrape",
}


class LazyGroup(click.Group):
    """A group whose commands are imported by name when first asked for (click's documented
    pattern for lazily loaded subcommands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *super().list_commands(ctx)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, attr = where.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command), where
        return command


@click.group(
    name="wanka",
    cls=LazyGroup,
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


def main(args: Sequence[str] | None = None) -> None:
    """Console entry point: exit 0 on success, 2 on bad usage or input, 1 otherwise.

    `args` stands in for the command line's arguments: the tests run commands in-process
    through it. The command is `wanka` however Python was started (`python -c`, a test).
    """
    try:
        code = app(args=args, prog_name="wanka", standalone_mode=False)
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
