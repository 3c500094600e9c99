"""The visual report: one self-contained HTML page of the shipped analyses, charts inline.

    html = build_html(cur)

is what `wanka report` writes and what the HTTP service serves at `/report`. `sections` lists
what the page shows, one section per analysis run through `warehouse.analyses`; `charts` draws
each one's chart with matplotlib as SVG text. Nothing in the page reaches the network: styles are
inline, charts are inline SVG, there is no script, so the page can be mailed and read offline.
"""

from __future__ import annotations

import html
import time
from datetime import UTC, datetime

import duckdb
import pyarrow as pa

from warehouse.analyses import all_analyses, run_analysis_table
from warehouse.errors import UserError
from warehouse.report.sections import SECTIONS, Section, frame

__all__ = ["build_html"]

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px;color:#222}
h1{margin:24px 0 4px}h2{border-bottom:2px solid #ddd;margin-top:36px}h3{margin:24px 0 4px}
p.about{color:#444;max-width:900px;white-space:pre-line}nav a{margin-right:12px}
table{border-collapse:collapse;font-size:12px;margin:8px 0 4px;display:block;overflow-x:auto}
th,td{border-bottom:1px solid #eee;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#f6f6f6;position:sticky;top:0}td.t,th.t{text-align:left}
figure{margin:8px 0}figure svg{max-width:100%;height:auto}.note{color:#777;font-size:12px}
code{background:#f3f3f3;padding:0 3px}
"""


def build_html(cur: duckdb.DuckDBPyConnection) -> str:
    """The report over the warehouse `cur` reads, as one HTML document."""
    started = time.perf_counter()
    analyses = all_analyses()
    topics: dict[str, list[str]] = {}
    for section in SECTIONS:
        try:
            result: pa.Table | str = run_analysis_table(cur, section.analysis, section.params)
        except UserError as error:  # e.g. a dynamic table it reads is not installed here
            result = str(error)
        shown = section.analysis not in {s.analysis for s in SECTIONS[: SECTIONS.index(section)]}
        parts = topics.setdefault(section.topic, [])
        if shown:
            a = analyses[section.analysis]
            parts.append(
                f'<h3 id="{a.name}">{html.escape(a.title)}</h3>'
                f'<p class="about">{html.escape(a.about)}</p>'
                f'<p class="note">wanka analyze {a.name}</p>'
            )
        parts.append(_section_body(section, result))
    nav = " ".join(f'<a href="#{t.lower()}">{t}</a>' for t in topics)
    body = "".join(
        f'<h2 id="{topic.lower()}">{topic}</h2>{"".join(parts)}' for topic, parts in topics.items()
    )
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    seconds = time.perf_counter() - started
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>wanka report</title><style>{_STYLE}</style></head><body>"
        "<h1>wanka: what the cluster says</h1>"
        f'<p class="note">Generated {made} in {seconds:.1f} s from the shipped analyses '
        f"(<code>sql/analyses/</code>); every figure below is one of their rows.</p>"
        f"<nav>{nav}</nav>{body}</body></html>"
    )


def _section_body(section: Section, result: pa.Table | str) -> str:
    if isinstance(result, str):
        return f'<p class="note">Not available in this warehouse: {html.escape(result)}</p>'
    out = []
    if section.chart is not None:
        svg = section.chart(frame(result)) if result.num_rows else None
        if svg:
            out.append(f'<figure data-analysis="{section.analysis}">{svg}</figure>')
    if section.rows:
        out.append(_table(result, section.rows, section.empty))
    return "".join(out)


def _table(result: pa.Table, limit: int, empty: str) -> str:
    if result.num_rows == 0:
        return f'<p class="note">{html.escape(empty)}</p>'
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in result.schema]
    head = "".join(
        f'<th class="{"" if n else "t"}">{html.escape(name)}</th>'
        for name, n in zip(result.column_names, numeric, strict=True)
    )
    rows = []
    for row in result.slice(0, limit).to_pylist():
        cells = "".join(
            f'<td class="{"" if n else "t"}">{html.escape(_cell(v))}</td>'
            for v, n in zip(row.values(), numeric, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    more = result.num_rows - limit
    note = f'<p class="note">{more:,} more rows.</p>' if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)
