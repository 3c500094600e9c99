"""`wanka export --lake DIR`, and opening a lake engine for `sql`/`refresh --engine`."""

from __future__ import annotations

from pathlib import Path

import click

from service.commands.common import open_engine, with_options
from warehouse.engines.base import LakeEngine
from warehouse.errors import UserError
from warehouse.lake.export import describe, export_lake

ENGINES = ("duckdb", "spark")


def engine_options(command: click.decorators.FC) -> click.decorators.FC:
    """--engine, --lake, --master, --remote: where `sql` and `refresh` run."""
    return with_options(
        command,
        [
            click.option(
                "--engine",
                type=click.Choice(ENGINES),
                default="duckdb",
                show_default=True,
                help="duckdb: the database file (or --lake); spark: the lake on Apache Spark.",
            ),
            click.option(
                "--lake",
                type=click.Path(file_okay=False, path_type=Path),
                help="Lake folder written by `wanka export` (needed with --engine spark).",
            ),
            click.option(
                "--master",
                metavar="URL",
                help="Spark master: local[N] (default local[*]), spark://host:7077, yarn, k8s://...",
            ),
            click.option("--remote", metavar="sc://HOST:PORT", help="Spark Connect server."),
        ],
    )


def open_lake_engine(
    engine: str, lake: Path | None, master: str | None, remote: str | None
) -> LakeEngine:
    """A lake engine over `lake`'s tables, with the model functions registered."""
    if lake is None:
        raise UserError(f"--engine {engine} reads a lake: pass --lake DIR (see wanka export)")
    if not lake.is_dir():
        raise UserError(f"lake {lake} does not exist: run wanka export --lake {lake} first")
    chosen: LakeEngine
    if engine == "spark":
        from warehouse.engines.spark import SparkEngine, spark_session

        chosen = SparkEngine(spark_session(master or "local[*]", remote))
    else:
        from warehouse.engines.duck import DuckLakeEngine

        chosen = DuckLakeEngine()
    return chosen


@click.command()
@click.option(
    "--lake",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the lake: one Delta table per folder.",
)
@click.pass_context
def export(ctx: click.Context, lake: Path) -> None:
    """Export base and dynamic tables as Delta Lake tables under LAKE, incrementally.

    Prints one line per table: what the export did (create, append, merge, partitions,
    overwrite, unchanged), the rows written and the watermark now in the lake.
    """
    with open_engine(ctx) as engine:
        results = export_lake(engine, lake)
    for result in results:
        click.echo(describe(result))
