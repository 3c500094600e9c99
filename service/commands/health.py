"""`wanka health`: which GPUs and nodes to watch, drain or replace, and why."""

from __future__ import annotations

import click

from service.commands.common import echo_report, open_engine, report_format
from warehouse.health import findings as report


@click.command()
@report_format("the same data (GET /v1/health)")
@click.pass_context
def health(ctx: click.Context, fmt: str) -> None:
    """Per GPU and node a state (ok, watch, drain, replace) with the rule that fired and its
    evidence: XIDs by what NVIDIA says to do first, ECC and remapped rows (and corrected errors
    climbing), throttling, NVLink errors, stragglers in their job, thermal outliers, GPUs and
    hosts gone silent, nccl-tests bandwidth below the fleet's. Thresholds are in
    wanka.health_rules."""
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            report.refresh_inputs(cur)
            found = report.report(cur)
        finally:
            cur.close()
    echo_report(found, report.render, fmt)
