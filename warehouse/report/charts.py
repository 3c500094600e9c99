"""Charts as inline SVG text, drawn with matplotlib (no browser, no network, no JavaScript).

Each function takes plain columns (lists from an Arrow table) and returns one `<svg>` element
that can be pasted into an HTML page. Text stays text (`svg.fonttype = none`), so the page is
small and searchable.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, no GUI toolkit

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

matplotlib.rcParams.update(
    {
        "svg.fonttype": "none",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "svg.hashsalt": "wanka",  # stable element ids: the same data gives the same page
    }
)

SIZE = (7.0, 3.0)


def _svg(fig: Figure) -> str:
    """The figure as an `<svg>` element (the XML prologue and DOCTYPE dropped)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _finish(fig: Figure, title: str, ylabel: str, legend: bool) -> str:
    ax = fig.axes[0]
    ax.set_title(title, loc="left", fontsize=10)
    ax.set_ylabel(ylabel)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, frameon=False, ncols=2)
    return _svg(fig)


def lines(
    series: Mapping[str, tuple[Sequence[datetime], Sequence[float | None]]],
    title: str,
    ylabel: str,
) -> str:
    """One line per series name over time."""
    fig, ax = plt.subplots(figsize=SIZE)
    for name, (xs, ys) in series.items():
        ys_nan = [float("nan") if y is None else y for y in ys]
        ax.plot(list(xs), ys_nan, label=name, lw=1.4)  # type: ignore[arg-type]  # dates plot
    fig.autofmt_xdate()
    return _finish(fig, title, ylabel, legend=len(series) > 1)


def bars(
    labels: Sequence[Any],
    groups: Mapping[str, Sequence[float | None]],
    title: str,
    ylabel: str,
    *,
    log: bool = False,
    line_at: float | None = None,
) -> str:
    """Grouped bars: one group per label, one bar per entry of `groups`."""
    fig, ax = plt.subplots(figsize=SIZE)
    width = 0.8 / max(len(groups), 1)
    for i, (name, values) in enumerate(groups.items()):
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [0 if v is None else v for v in values], width, label=name)
    ax.set_xticks(range(len(labels)), [str(label) for label in labels])
    if len(labels) > 6:
        ax.tick_params(axis="x", labelrotation=30)
    if log:
        ax.set_yscale("log")
    if line_at is not None:
        ax.axhline(line_at, color="crimson", lw=1, ls="--")
    return _finish(fig, title, ylabel, legend=len(groups) > 1)


def stacked(
    labels: Sequence[str], stacks: Mapping[str, Sequence[float]], title: str, ylabel: str
) -> str:
    """Stacked bars: one bar per label, one segment per entry of `stacks`."""
    fig, ax = plt.subplots(figsize=SIZE)
    bottom = [0.0] * len(labels)
    for name, values in stacks.items():
        ax.bar(range(len(labels)), values, 0.6, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xticks(range(len(labels)), labels)
    return _finish(fig, title, ylabel, legend=True)
