"""`wanka refresh [NAME] [--full]`: bring the named dynamic table up to date (the dynamic tables it
reads first), or every one that is due or whose sources changed."""

from __future__ import annotations

from pathlib import Path

import click

from service.commands.common import open_engine
from service.commands.lake import engine_options, open_lake_engine
from warehouse.dynamic.schedule import Failed, describe, run_due, seconds
from warehouse.engines.refresh import describe_lake, refresh_lake
from warehouse.errors import WankaError
from warehouse.tsdb import tiers


@click.command()
@click.argument("name", required=False)
@click.option("--full", is_flag=True, help="Recompute instead of applying the changes.")
@engine_options
@click.pass_context
def refresh(
    ctx: click.Context,
    name: str | None,
    full: bool,
    engine: str,
    lake: Path | None,
    master: str | None,
    remote: str | None,
) -> None:
    """Refresh dynamic table NAME now, after the dynamic tables it reads (even while a failure
    backs off; --full recomputes NAME alone); with no NAME, every table that is due or whose
    sources changed since its last refresh, in dependency order.

    Prints one line per table: what the refresh did, or why it failed or was skipped. Exits 1
    when any refresh failed. With --engine spark --lake DIR, the dynamic tables of the lake
    (as `wanka export` recorded them) are refreshed on Spark and committed to the lake.
    """
    if engine != "duckdb" or lake is not None:
        with open_lake_engine(engine, lake, master, remote) as lake_engine:
            assert lake is not None
            for done in refresh_lake(lake_engine, lake, name, full=full):
                click.echo(describe_lake(done))
        return
    with open_engine(ctx) as opened:
        cur = opened.cursor()
        try:
            tiers.fold(cur)  # the downsampling tiers first: they follow every batch
            outcomes = run_due(cur, name=name, full=full, changed=name is None)
            lines = [describe(o, seconds(cur, o)) for o in outcomes]
        finally:
            cur.close()
    for line in lines:
        click.echo(line)
    if not outcomes:
        click.echo("nothing to refresh: no dynamic table is due or has changed sources")
    failed = [o.name for o in outcomes if isinstance(o, Failed)]
    if failed:
        raise WankaError(f"{len(failed)} of {len(outcomes)} refreshes failed: {', '.join(failed)}")
