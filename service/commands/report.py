"""`wanka report`: write the visual report, one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from service.commands.common import open_engine
from warehouse.errors import UserError


@click.command()
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="HTML file to write.",
)
@click.pass_context
def report(ctx: click.Context, out: Path) -> None:
    """Write the shipped analyses as one HTML page with charts (viewable offline)."""
    from warehouse.report import build_html  # matplotlib: loaded only by the command using it

    with open_engine(ctx) as engine:
        cur = engine.cursor()
        try:
            page = build_html(cur)
        finally:
            cur.close()
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {out}: {error.strerror}") from None
    click.echo(f"wrote {out} ({len(page.encode()) / 1e3:,.0f} kB)")
