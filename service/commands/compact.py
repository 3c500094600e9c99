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
    transaction per window and metric, from the hot table into compressed blocks. Queries see
    the same rows before and after. Prints each window and metric moved, then the total.
    """
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            moved = compaction.compact(cur, grace=timedelta(seconds=grace))
        finally:
            cur.close()
    for done in moved:
        click.echo(
            f"{done.window:%Y-%m-%d %H:%M} {done.metric}: {done.samples:,} samples in "
            f"{done.blocks} blocks, {done.bytes:,} bytes"
        )
    samples = sum(m.samples for m in moved)
    size = sum(m.bytes for m in moved)
    per = f" ({size / samples:.2f} B/sample)" if samples else ""
    click.echo(f"compacted {samples:,} samples of {len(moved)} window-metrics{per}")
