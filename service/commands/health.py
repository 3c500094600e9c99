"""`wanka health`: which GPUs and nodes to watch, drain or replace, and why."""

from __future__ import annotations

import json

import click

from service.commands.common import open_engine
from warehouse import health as report


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A text report, or the same data as JSON (GET /v1/health).",
)
@click.pass_context
def health(ctx: click.Context, fmt: str) -> None:
    """Per GPU and node a state (ok, watch, drain, replace) with the rule that fired and its
    evidence: XIDs by what NVIDIA says to do first, ECC and remapped rows, throttling, NVLink
    errors, GPUs gone silent. Thresholds are in wanka.health_rules."""
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            found = report.report(cur)
        finally:
            cur.close()
    click.echo(json.dumps(found, indent=2) if fmt == "json" else report.render(found))
