"""`wanka refresh [NAME] [--full]`: refresh the named dynamic table, or every one that is due."""

from __future__ import annotations

import click
import pyarrow as pa

from service import terminal
from service.commands.common import open_engine
from warehouse.dynamic.history import RefreshResult
from warehouse.dynamic.schedule import refresh_once
from warehouse.errors import WankaError


@click.command()
@click.argument("name", required=False)
@click.option("--full", is_flag=True, help="Recompute instead of applying the changes.")
@click.pass_context
def refresh(ctx: click.Context, name: str | None, full: bool) -> None:
    """Refresh dynamic table NAME, or every dynamic table that is due, once."""
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            results = refresh_once(cur, name, full=full)
        finally:
            cur.close()
    done = [r for r in results if isinstance(r, RefreshResult)]
    failed = [r for r in results if isinstance(r, WankaError)]
    table = pa.table(
        {
            "name": [r.name for r in done],
            "refresh_mode": [r.refresh_mode for r in done],
            "rows_inserted": pa.array([r.rows_inserted for r in done], pa.int64()),
            "rows_deleted": pa.array([r.rows_deleted for r in done], pa.int64()),
            "reason": pa.array([r.reason for r in done], pa.string()),
        }
    )
    terminal.print_table(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()))
    if failed:
        raise WankaError("; ".join(str(f) for f in failed))
