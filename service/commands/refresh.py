"""`wanka refresh [NAME] [--full] [--signals]`: bring the named dynamic table up to date (the
dynamic tables it reads first), or every one that is due or whose sources changed; with
--signals, node_signals derived again from its sources first."""

from __future__ import annotations

from pathlib import Path

import click

from service.commands.common import open_engine
from service.commands.lake import engine_options, open_lake_engine
from warehouse.dynamic.schedule import Failed, describe, run_due, seconds
from warehouse.engines.refresh import describe_lake, refresh_lake
from warehouse.errors import WankaError
from warehouse.faults import signals as fault_signals
from warehouse.faults import thermal
from warehouse.kernel.transactions import transaction
from warehouse.tsdb import tiers


@click.command()
@click.argument("name", required=False)
@click.option("--full", is_flag=True, help="Recompute instead of applying the changes.")
@click.option(
    "--signals",
    "rebuild_signals",
    is_flag=True,
    help="First derive node_signals (node_risk's evidence) again from node_faults, jobs and "
    "gpu_events: what SQL INSERT/UPDATE/DELETE on those tables wrote is seen only then.",
)
@engine_options
@click.pass_context
def refresh(
    ctx: click.Context,
    name: str | None,
    full: bool,
    rebuild_signals: bool,
    engine: str,
    lake: Path | None,
    master: str | None,
    remote: str | None,
) -> None:
    """Refresh dynamic table NAME now, after the dynamic tables it reads (even while a failure
    backs off; --full recomputes NAME alone); with no NAME, every table that is due or whose
    sources changed since its last refresh, in dependency order.

    Ingests, remote_write and scrapes add node_risk's evidence (node_signals) as they store
    their rows; rows written to node_faults, jobs or gpu_events by SQL DML are evidence only
    after `wanka refresh --signals` derives node_signals again from those tables (in one
    transaction), before the refreshes.

    Prints one line per table: what the refresh did, or why it failed or was skipped. Exits 1
    when any refresh failed. With --engine spark --lake DIR, the dynamic tables of the lake
    (as `wanka export` recorded them) are refreshed on Spark and committed to the lake.
    """
    if rebuild_signals and (engine != "duckdb" or lake is not None):
        raise WankaError("--signals derives node_signals in the warehouse, not in a lake")
    if engine != "duckdb" or lake is not None:
        with open_lake_engine(engine, lake, master, remote) as lake_engine:
            assert lake is not None
            for done in refresh_lake(lake_engine, lake, name, full=full):
                click.echo(describe_lake(done))
        return
    with open_engine(ctx) as opened:
        cur = opened.cursor()
        try:
            if rebuild_signals:
                cur.begin()
                try:
                    kept = fault_signals.rebuild(cur)
                except BaseException:
                    cur.rollback()
                    raise
                cur.commit()
                click.echo(f"node_signals: derived again from node_faults, jobs and gpu_events: "
                           f"{kept} rows")  # fmt: skip
            tiers.fold(cur)  # the downsampling tiers first: they follow every batch
            with transaction(cur):  # then the thermal residuals of the whole days they hold
                thermal.derive(cur)
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
