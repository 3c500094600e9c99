"""The visual report: one self-contained page that headless Chromium renders without errors."""

from __future__ import annotations

import html
import re

import pytest

from tests.browser import Browser
from warehouse.analyses import all_analyses
from warehouse.kernel.engine import Engine
from warehouse.report import build_html
from warehouse.report.sections import SECTIONS


@pytest.fixture(scope="module")
def page_html(demo_engine: Engine) -> str:
    cur = demo_engine.cursor()
    try:
        return build_html(cur)
    finally:
        cur.close()


def test_the_page_needs_no_network(page_html: str) -> None:
    """No script, stylesheet, image or font is fetched: everything is inline."""
    assert not re.search(r"<(script|img|iframe)\b", page_html)
    assert re.findall(r"<link[^>]*>", page_html) == ['<link rel="icon" href="data:,">']
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page_html)
    assert not re.search(r"url\((?!#)", page_html) and "@import" not in page_html


def test_every_analysis_in_the_report_is_titled_and_charted(page_html: str) -> None:
    for name in {s.analysis for s in SECTIONS}:
        assert f'id="{name}"' in page_html
        assert html.escape(all_analyses()[name].title) in page_html
    charted = {s.analysis for s in SECTIONS if s.chart is not None}
    assert page_html.count("<figure") == sum(1 for s in SECTIONS if s.chart is not None)
    assert {m for m in re.findall(r'data-analysis="([a-z_]+)"', page_html)} == charted


@pytest.mark.slow
def test_chromium_renders_the_report_with_charts_and_no_errors(
    page_html: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("report")
    path = folder / "report.html"
    path.write_text(page_html, encoding="utf-8")
    with Browser() as browser:
        page = browser.open(path.as_uri())
        figures = page.evaluate("document.querySelectorAll('figure > svg').length")
        drawn = page.evaluate(
            "[...document.querySelectorAll('figure > svg')]"
            ".filter(s => s.getBoundingClientRect().width > 300 && s.querySelector('path')).length"
        )
        tables = page.evaluate("document.querySelectorAll('table tbody tr').length")
        shot = page.screenshot(folder / "report.png")
        errors = page.errors
    print(f"report screenshot: {shot}")
    charted = sum(1 for s in SECTIONS if s.chart is not None)
    assert figures == drawn == charted >= 12
    assert tables > 50
    assert errors == []
    assert shot.stat().st_size > 50_000
