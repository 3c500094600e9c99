"""`wanka compact`: move the samples of closed windows into compressed blocks, now."""

from __future__ import annotations

from datetime import timedelta

import click

from service.commands.common import open_engine
from warehouse.tsdb import compact as compaction


@click.command()
@click.option(
    "--grace",
    default=int(compaction.GRACE.total_seconds()),
    show_default=True,
    type=click.IntRange(min=0),
    help="Seconds after a window ends before it is closed (late samples still land hot).",
)
@click.pass_context
def compact(ctx: click.Context, grace: int) -> None:
    """Compress the telemetry of every closed window (admin: it rewrites the store).

    What `wanka serve` does on its scheduler: each closed 2-hour window's samples go, one
    transaction per window and metric, from the hot table into compressed blocks, and the
    downsampling tiers' rows of those windows too. Queries see the same rows before and after.
    Prints each window and metric moved, then the totals.
    """
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            moved = compaction.compact(cur, grace=timedelta(seconds=grace))
        finally:
            cur.close()
    for done in moved:
        what = f"{done.tier} rows" if done.tier else "samples"
        click.echo(
            f"{done.window:%Y-%m-%d %H:%M} {done.metric}: {done.samples:,} {what} in "
            f"{done.blocks} blocks, {done.bytes:,} bytes"
        )
    raw = [m for m in moved if m.tier is None]
    samples = sum(m.samples for m in raw)
    size = sum(m.bytes for m in raw)
    per = f" ({size / samples:.2f} B/sample)" if samples else ""
    click.echo(f"compacted {samples:,} samples of {len(raw)} window-metrics{per}")
    for tier in sorted({m.tier for m in moved if m.tier}):
        rows = [m for m in moved if m.tier == tier]
        count, size = sum(m.samples for m in rows), sum(m.bytes for m in rows)
        click.echo(f"compacted {count:,} rows of {tier} ({size / count:.2f} B/row)")
