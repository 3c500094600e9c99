"""`wanka jobstats JOB_ID`: one job's GPU efficiency, Jobstats-style."""

from __future__ import annotations

import click

from service.commands.common import echo_report, open_engine, report_format
from warehouse.dynamic.refresh import catch_up
from warehouse.jobs import stats as report


@click.command()
@click.argument("job_id")
@report_format("the same data")
@click.pass_context
def jobstats(ctx: click.Context, job_id: str, fmt: str) -> None:
    """What JOB_ID did with its GPUs: the job's facts, each GPU's utilisation, memory and
    power, and notes (idle GPUs, low utilisation, memory far below the GPU's, a time limit far
    above the run time, a GPU far bigger than needed). The notes' thresholds are in
    wanka.efficiency_rules. The per-job tables are brought up to the telemetry first (an
    incremental refresh: nothing to do costs a few milliseconds). A job wanka has never seen is
    exit status 2."""
    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            catch_up(cur, report.TABLES)
            found = report.stats(cur, job_id)
        finally:
            cur.close()
    echo_report(found, report.render, fmt)
