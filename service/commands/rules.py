"""`wanka test rules FILE...`: promtool's unit tests of rule files (`promtool test rules`),
run by wanka's own rule evaluation over a scratch warehouse per test group."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def test() -> None:
    """Run unit tests of files wanka reads."""


@test.command("rules")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def rules(files: tuple[Path, ...]) -> None:
    """Run promtool-format unit tests of rule files (input_series, alert_rule_test,
    promql_expr_test). Exit 0 when every test passes, 1 when one fails, printing what promtool
    prints for a failed expectation."""
    from warehouse.rules import testrun

    failed = False
    for file in files:
        click.echo(f"Unit Testing:  {file}")
        failures, warnings = testrun.run_file(file)
        for warning in warnings:
            click.echo(warning, err=True)
        if failures:
            click.echo("  FAILED:", err=True)
            for failure in failures:
                click.echo(failure, err=True)
                click.echo()
            failed = True
        else:
            click.echo("  SUCCESS")
        click.echo()
    if failed:
        raise SystemExit(1)
