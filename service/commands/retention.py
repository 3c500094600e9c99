"""`wanka retention [TABLE [KEEP|off]] [--apply]`: show, set or apply retention rules."""

from __future__ import annotations

from datetime import timedelta

import click

from service.commands.common import open_engine
from warehouse.dynamic import retention as checked
from warehouse.tsdb import retention as rules


@click.command()
@click.argument("table", required=False)
@click.argument("keep", required=False)
@click.option("--apply", "apply_now", is_flag=True, help="Drop what the rules say is too old, now.")
@click.pass_context
def retention(ctx: click.Context, table: str | None, keep: str | None, apply_now: bool) -> None:
    """Keep TABLE's raw rows for KEEP (e.g. '14 days'; 'off' keeps them all).

    The same as `ALTER TABLE gpu_metrics SET (retention = '14 days')`. `wanka serve` applies
    the rules on its scheduler; --apply does it now (one transaction per day dropped). Dynamic
    tables keep what they derived from the dropped rows. Without arguments, lists the rules.
    """
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            if table is not None:
                if keep is None:
                    raise click.UsageError("give KEEP (e.g. '14 days') or 'off'")
                click.echo(checked.set_rule(cur, table, None if keep.lower() == "off" else keep))
            if apply_now:
                for done in rules.apply(cur):
                    click.echo(
                        f"{done.table}: dropped {done.rows:,} rows before "
                        f"{done.cutoff:%Y-%m-%d %H:%M:%S %Z} in {done.steps} steps"
                    )
            if table is None and not apply_now:
                found = rules.rules(cur)
                for rule in found:
                    held = f"{rule.held_from:%Y-%m-%d %H:%M %Z}" if rule.held_from else "all"
                    click.echo(f"{rule.table}: keep {_said(rule.keep)}; rows held from {held}")
                if not found:
                    click.echo("no retention rules: every row is kept")
        finally:
            cur.close()


def _said(keep: timedelta) -> str:
    """'14 days', '1 day', '6:00:00' (hours), or both.

    >>> _said(timedelta(days=14)), _said(timedelta(days=1)), _said(timedelta(hours=36))
    ('14 days', '1 day', '1 day, 12:00:00')
    """
    if keep.seconds or keep.microseconds:
        return str(keep)
    return f"{keep.days} day{'s' if keep.days != 1 else ''}"
