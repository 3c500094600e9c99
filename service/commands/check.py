"""`wanka check config FILE`: validate a configuration without starting anything, as
`promtool check config` does (exit 0 when valid, 2 with the file, line and key otherwise)."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def check() -> None:
    """Check files wanka reads, without starting anything."""


@check.command("config")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def config(files: tuple[Path, ...]) -> None:
    """Check configuration files (wanka.yml): every key known, every value of its type, every
    file they name readable, every secret found. Exit 0 when all are valid, 2 otherwise."""
    from service.config import build
    from service.config.spec import ConfigError

    failed = 0
    for file in files:
        try:
            settings = build.load(file, {})
        except ConfigError as error:
            click.echo(f"FAILED: {error}", err=True)
            failed += 1
            continue
        jobs = settings.feeds.scrape_jobs
        click.echo(f"SUCCESS: {file} is valid ({len(jobs)} scrape config{'s' * (len(jobs) != 1)})")
    if failed:
        raise SystemExit(2)


@check.command("rules")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def rules(files: tuple[Path, ...]) -> None:
    """Check Prometheus 2.42 rule files as `promtool check rules` does: every key known, every
    expression parsed, every label and annotation template parsed. Exit 0 when all are valid,
    2 otherwise (each error on stderr with its line and column, as promtool words it)."""
    from warehouse.rules import rulefile

    failed = 0
    for file in files:
        click.echo(f"Checking {file}")
        try:
            groups = rulefile.load(file)
        except rulefile.RuleFileError as error:
            click.echo("  FAILED:", err=True)
            click.echo(str(error), err=True)
            click.echo()
            failed += 1
            continue
        lint = rulefile.duplicate_rules(groups)
        if lint is not None:  # a warning, as promtool's default lint: the file is valid
            click.echo("  FAILED:", err=True)
            click.echo(lint, err=True)
        else:
            click.echo(f"  SUCCESS: {rulefile.rules_count(groups)} rules found")
        click.echo()
    if failed:
        raise SystemExit(2)
