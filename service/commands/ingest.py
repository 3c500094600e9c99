"""`wanka ingest FORMAT PATH...`: the field's file formats into the warehouse, once."""

from __future__ import annotations

import sys

import click

from service import terminal
from service.commands.common import open_engine, read_options


@click.command()
@click.argument("fmt", metavar="FORMAT")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--force", is_flag=True, help="Ingest again content that was ingested before.")
@click.option("--at", metavar="ISO", help="dcgm: scrape time of every sample.")
@click.option("--host", help="Host name when the input carries none (nvidia-smi).")
@click.option("--cluster", help="Cluster the rows belong to when the input does not say.")
@click.option(
    "--columns", metavar="A,B,...", help="sacct/nvidia-smi: field names of output without a header."
)
@click.option(
    "--trace-start",
    metavar="ISO",
    help="pods, faults: wall-clock time the trace's relative times count from.",
)
@click.option("--table", help="csv/parquet (and inventory): the table to load into.")
@click.option(
    "--tz", "timezone", default="UTC", show_default=True, help="Zone of times written without one."
)
@click.option("--collective", help="nccl-tests: the collective, when the file name does not say.")
@click.pass_context
def ingest(
    ctx: click.Context,
    fmt: str,
    paths: tuple[str, ...],
    force: bool,
    at: str | None,
    host: str | None,
    cluster: str | None,
    columns: str | None,
    trace_start: str | None,
    table: str | None,
    timezone: str,
    collective: str | None,
) -> None:
    """Read FORMAT files (a file, a folder, or - for stdin) into the warehouse.

    FORMAT is one of dcgm, nvidia-smi, sacct, scontrol, pods, nccl-tests, kernel-log, inventory,
    parquet, csv, faults (a fault trace, a CSV/ndjson fault list, sinfo -R or scontrol show node
    output). Each file is one batch and one transaction; the same content twice is a no-op
    (--force to redo).
    """
    from warehouse.ingest import ingest as run_ingest

    options = read_options(
        lambda field: "--" + field.replace("_", "-"),
        at=at,
        host=host,
        cluster=cluster,
        columns=columns,
        trace_start=trace_start,
        table=table,
        timezone=timezone,
        collective=collective,
    )
    with open_engine(ctx) as engine, terminal.progress(f"ingesting {fmt}", None) as advance:
        results = run_ingest(engine, fmt, list(paths), options, force=force, progress=advance)
    for result in results:
        if result.duplicate_of is not None:
            print(
                f"{result.source}: already ingested as batch {result.duplicate_of} "
                f"(same content); --force loads it again"
            )
            continue
        loaded = ", ".join(f"{t} {n:,} rows" for t, n in sorted(result.rows.items())) or "no rows"
        print(
            f"batch {result.batch_id}: {result.source}: {loaded}, {result.rejected:,} rejected "
            f"({result.seconds:.2f} s)"
        )
        if result.first_reject is not None:
            first = result.first_reject
            where = f"line {first.line}: " if first.line else ""
            print(
                f"wanka: warning: {result.source}: {result.rejected:,} lines rejected, kept in "
                f"wanka.ingest_rejects (batch_id = {result.batch_id}); "
                f"first: {where}{first.reason}",
                file=sys.stderr,
            )
