"""A fast path for the commonest dashboard shapes, evaluated over decoded arrays, not SQL.

`sum|avg|min|max|count [by|without (labels)] (SELECTOR)` and the same over
`sum|avg|min|max|count_over_time(SELECTOR[range])` (a range of whole steps), with `offset`, on
one gpu_series metric. The SQL route scans and joins every sample of the window through DuckDB
(~1.4M for a day of 1,000 GPUs at 60 s: ~0.1 s); here DuckDB gives the series (and their group
labels), the compressed blocks the statistics keep and the hot samples, and numpy does the rest:

1. instants: in each part (a block, the hot samples) the latest sample at or before each step
   it can reach is found by a binary search in its series' run (a block holds whole series
   runs ordered by time), and the newest of the parts' is the step's point if it lies within
   the lookback;
2. windows of m steps: each series' samples go to the step buckets (t_{k-1} - offset,
   t_k - offset] (contiguous in a run, so reduced by `reduceat`): count, sum, min, max, the
   samples exactly on a step kept apart; a window is m buckets plus the samples on its closed
   left end, combined by doubling spans;
3. the series are grouped (sorted by group) and each group reduced along them.

It reads through `run(sql, params) -> pa.Table`, the caller's session: the reader's role, time
limit and row cap are those of the SQL route, which reads the same tables. The times and block
ids are parameters, so a panel refreshed again sends the same texts, whose parse (and policy
check) the session keeps (`warehouse.parsing.script`). It answers None, and the
SQL route runs, for anything it does not do the same way: another shape, `@`, a metric that
also has prom_samples or staleness markers in the window, NULL values, more samples than
`cold_scan.BUDGET`, more cells (series x steps) than `MAX_CELLS` in each of `MAX_SLICES`
slices of the steps (counting, where every series of the metric would not fit, only those
with samples in the window: `native_reads.present`), and when the blocks of a slice's window
changed while it read, or a series came in between its reads (its statements are not one
snapshot: compaction moved hot samples into blocks, or cut blocks again, in between).
`check()` is called between blocks (the time limit, a cancel). Results match the SQL route's
up to the order of float additions (tests/warehouse/promql/test_native.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.promql import native_reads as reads
from warehouse.promql import native_steps, source
from warehouse.promql.context import ms
from warehouse.promql.native_reads import Fallback as Fallback
from warehouse.promql.native_reads import Run
from warehouse.promql.plan import Grid
from warehouse.promql.text import seconds_text, values_text

#: Off, every query takes the SQL route (the tests compare the two).
ENABLED = True
#: The most series x steps (plus a window's steps) the arrays may hold: a few arrays of 8 B
#: a cell, ~100-150 MB at most, which DuckDB's memory limit does not see (a day of 1,000 GPUs
#: at 60 s steps is 1.44M cells; more goes the SQL way, within the limit).
MAX_CELLS = 4_000_000
#: When the series present need more cells than that over every step, the steps are cut into
#: at most this many slices, each evaluated alone (reading its own blocks and hot samples;
#: a block that two slices reach is decoded for each), and only their groups' points kept.
MAX_SLICES = 8
AGGREGATES = frozenset({"sum", "avg", "min", "max", "count"})
OVER_TIME = frozenset(
    {"sum_over_time", "avg_over_time", "min_over_time", "max_over_time", "count_over_time"}
)

#: Runs a statement with its named parameters (`$name`) in the caller's session.


@dataclass(frozen=True)
class Shape:
    """A query the fast path answers: `op` by (or without) `labels` over a selector's
    instants (`function` None) or `function` over windows of `range_ms`."""

    op: str
    labels: tuple[str, ...] | None  # None: no grouping
    without: bool
    function: str | None
    range_ms: int
    offset_ms: int
    groups: tuple[tuple[tuple[str, str, str], ...], ...]
    metric: str


def _unwrap(node: Any) -> Any:
    while type(node).__name__ == "ParenExpr":
        node = node.expr
    return node


def shape_of(tree: Any) -> Shape | None:
    """The fast path's reading of a parse tree, or None when it is not one of its shapes."""
    tree = _unwrap(tree)
    if type(tree).__name__ != "AggregateExpr" or str(tree.op) not in AGGREGATES:
        return None
    if tree.param is not None:
        return None
    labels: tuple[str, ...] | None = None
    without = False
    if tree.modifier is not None:
        labels = tuple(tree.modifier.labels)
        without = str(tree.modifier.type).endswith("Without")
    inner = _unwrap(tree.expr)
    function, range_ms = None, 0
    if type(inner).__name__ == "Call":
        function = inner.func.name
        if function not in OVER_TIME or len(inner.args) != 1:
            return None
        matrix = _unwrap(inner.args[0])
        if type(matrix).__name__ != "MatrixSelector":
            return None
        range_ms, inner = ms(matrix.range), matrix.vector_selector
        if labels is not None and not without and "__name__" in labels:
            return None  # the function dropped the name before the grouping
    if type(inner).__name__ != "VectorSelector" or inner.at is not None:
        return None
    groups = source.matchers_of(inner)
    metric = source.metric_of(groups)
    if metric is None:
        return None
    frozen = tuple(tuple(group) for group in groups)
    return Shape(str(tree.op), labels, without, function, range_ms, ms(inner.offset), frozen,
                 metric)  # fmt: skip


@dataclass(frozen=True)
class Native:
    """A shape on a grid: what `answer` evaluates."""

    shape: Shape
    grid: Grid
    lookback_ms: int
    kind: str  # vector (an instant query) | matrix


def plan(tree: Any, grid: Grid, lookback_ms: int, kind: str) -> Native | None:
    """The fast path for `tree` on `grid`, or None."""
    if not ENABLED:
        return None
    shape = shape_of(tree)
    if shape is None:
        return None
    if shape.function is not None:  # windows of whole steps; an instant's is one step
        if grid.last == 0:
            grid = Grid(grid.start_ms, grid.start_ms, shape.range_ms)
        if shape.range_ms <= 0 or shape.range_ms % grid.step_ms:
            return None
    return Native(shape, grid, lookback_ms, kind)


def answer(
    native: Native,
    run: Run,
    check: Callable[[], None] = lambda: None,
    max_series: int | None = None,
) -> bytes | None:
    """`data` of the answer as JSON bytes, or None when the SQL route must answer (as it
    must, to refuse it, when the answer has more than `max_series` series)."""
    try:
        return _answer(native, run, check, max_series)
    except Fallback:
        return None


def _answer(native: Native, run: Run, check: Callable[[], None], max_series: int | None) -> bytes:
    g, shape = native.grid, native.shape
    n = g.last + 1
    table, kept = reads.series(native, run)
    m = shape.range_ms // g.step_ms if shape.function else 0
    sids = table["sid"].to_numpy().astype(np.int64)
    absent, width = sids[:0], n  # steps evaluated at once
    if len(sids) * (n + m) > MAX_CELLS:  # sized by the series the window holds
        fewest = -(-n // MAX_SLICES)
        here = reads.present(native, run, sids, kept, MAX_CELLS // (fewest + m), check)
        if not here.any():
            raise Fallback
        table, absent = table.filter(pa.array(here)), sids[~here]
        width = min(n, MAX_CELLS // int(here.sum()) - m)
        if width < fewest:  # the blocks' series and the hot ones together: too many slices
            raise Fallback
    sids, keys, group = reads.groups(native, table)
    found = np.empty((len(keys), n))
    exists = np.empty((len(keys), n), dtype=bool)
    for at in range(0, n, width):
        part = _slice(native, at, min(n, at + width))
        ids = kept if width == n else reads.kept(part, run)
        points = _points(part, reads.parts(part, run, sids, ids, check, absent), len(sids))
        check()
        with np.errstate(invalid="ignore", over="ignore"):
            found[:, at : at + width], exists[:, at : at + width] = native_steps.aggregate(
                shape.op, *points, group, len(keys)
            )
    if max_series is not None and int(exists.any(axis=1).sum()) > max_series:
        raise Fallback
    return _render(native, keys, found, exists)


def _slice(native: Native, at: int, end: int) -> Native:
    """`native` on its grid's steps at .. end - 1."""
    g = native.grid
    grid = Grid(g.start_ms + at * g.step_ms, g.start_ms + (end - 1) * g.step_ms, g.step_ms)
    return Native(native.shape, grid, native.lookback_ms, native.kind)


def _points(native: Native, parts: Any, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(value, present) per series and step of the grid: its point there."""
    g, shape = native.grid, native.shape
    with np.errstate(invalid="ignore", over="ignore"):  # Inf - Inf is NaN, as in SQL
        if shape.function is None:
            return native_steps.instants(g, shape.offset_ms, native.lookback_ms, parts, count)
        return native_steps.over_time(
            g, shape.offset_ms, shape.range_ms, shape.function, parts, count
        )


def _render(native: Native, keys: list[str], found: np.ndarray, exists: np.ndarray) -> bytes:
    """The answer's JSON: each group with a point, in the order of its labels' text. The points'
    texts are made by Arrow's string kernels, all at once."""
    g = native.grid
    order = np.array(sorted(range(len(keys)), key=lambda i: keys[i]), dtype=np.int64)
    rows, steps = np.nonzero(exists[order])  # by group, then step
    groups, counts = np.unique(rows, return_counts=True)
    times = pa.array([seconds_text(g.start_ms + k * g.step_ms) for k in range(g.last + 1)])
    points = pc.binary_join_element_wise(
        "[", times.take(steps), ',"', values_text(found[order[rows], steps]), '"]', ""
    )
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    series = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), points), ",")
    name, (lead, tail) = ("value", ("", "")) if native.kind == "vector" else ("values", "[]")
    body = ",".join(
        f'{{"metric":{keys[order[i]]},"{name}":{lead}{text}{tail}}}'
        for i, text in zip(groups.tolist(), series.to_pylist(), strict=True)
    )
    return f'{{"resultType":"{native.kind}","result":[{body}]}}'.encode()
