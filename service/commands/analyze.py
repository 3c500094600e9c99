"""`wanka analyze`: run one of the shipped analyses (`sql/analyses/`), or list them."""

from __future__ import annotations

from pathlib import Path

import click

from service.commands.common import open_engine, output_options
from service.commands.sql import check_binary_target, emit
from warehouse.analyses import all_analyses, parse_assignments, run_analysis
from warehouse.errors import UserError


@click.command()
@click.argument("name", required=False)
@click.option("--list", "listing", is_flag=True, help="List the analyses with what they answer.")
@click.option(
    "--param",
    "-p",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="A parameter the analysis declares (repeatable); others keep their defaults.",
)
@output_options
@click.pass_context
def analyze(
    ctx: click.Context,
    name: str | None,
    listing: bool,
    params: tuple[str, ...],
    fmt: str,
    output: Path | None,
    max_rows: int,
) -> None:
    """Run the shipped analysis NAME (see --list), e.g. `wanka analyze checkpoint_cost -p
    flows_per_node=2`."""
    if listing:
        for analysis in all_analyses().values():
            click.echo(f"{analysis.name:<28} {analysis.title}")
            for p in analysis.params:
                click.echo(f"{'':<30}${p.name} {p.type} = {p.default!r}: {p.description}")
        return
    if name is None:
        raise UserError("name an analysis, or pass --list to see them")
    given = parse_assignments(params)
    check_binary_target(fmt, output)
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            emit(run_analysis(cur, name, given), fmt, output, max_rows)
        finally:
            cur.close()
