"""`wanka scrape --once FILE`: one scrape round of Prometheus file_sd targets, stored as one
batch (for cron; `wanka serve --scrape-config FILE` scrapes on an interval)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from service.commands.common import Duration, open_engine

if TYPE_CHECKING:
    from warehouse.scrape.scraper import Round
    from warehouse.tsdb.append import Appended


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--once", is_flag=True, help="One round, then exit (else one every --interval).")
@click.option("--interval", type=Duration(), default="15s", show_default=True)
@click.option("--timeout", type=Duration(), default="10s", show_default=True, help="Per target.")
@click.option("--job", default="dcgm", show_default=True, help="`job` label of the targets.")
@click.pass_context
def scrape(
    ctx: click.Context, file: Path, once: bool, interval: float, timeout: float, job: str
) -> None:
    """Scrape the targets of FILE (Prometheus file_sd, JSON or YAML) as Prometheus would.

    Each target's /metrics (dcgm-exporter or any exporter) is pulled concurrently; DCGM series
    go to gpu_metrics, the rest (and `up`, `scrape_duration_seconds`, ...) to prom_samples; a
    sample already stored is not stored again. wanka.scrape_targets holds each target's health.
    Exit status 1 when a target could not be scraped (the others are stored).
    """
    # The scraper's readers (polars, the exposition parser) load only for this command.
    from warehouse.ingest.batch import read_context
    from warehouse.ingest.models import ModelNames
    from warehouse.scrape.scraper import Scraper
    from warehouse.scrape.store import store_round
    from warehouse.scrape.targets import load

    targets = load(file, job)
    down = 0
    with open_engine(ctx) as engine:
        scraper = Scraper(ModelNames(read_context(engine).model_names), timeout_s=timeout)
        cur = engine.cursor()
        try:
            while True:
                started = time.monotonic()
                done = scraper.round(targets)
                stored = store_round(cur, done)
                down = _said(done, stored)
                if once:
                    break
                time.sleep(max(interval - (time.monotonic() - started), 0.0))
                targets = load(file, job)
        finally:
            cur.close()
    if down:
        raise SystemExit(1)


def _said(done: Round, stored: Appended) -> int:
    """Print each target's health and what was stored; the number of targets down."""
    down = 0
    for h in done.health:
        state = "up" if h.up else "DOWN"
        line = f"{state:<4} {h.target}  {h.samples:,} samples in {h.duration_s:.3f} s"
        click.echo(line + (f"  {h.error}" if h.error else ""), err=not h.up)
        down += not h.up
    s = stored
    click.echo(
        f"batch {s.batch_id}: {s.gpu:,} samples to gpu_metrics, {s.other:,} to prom_samples, "
        f"{s.stale:,} staleness markers, {s.duplicates:,} already stored"
    )
    return down
