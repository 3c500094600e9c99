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
`cold_scan.BUDGET` or more cells (series x steps) than `MAX_CELLS` (counting, where every
series of the metric would not fit, only those with samples in the window: `_present`), and
when the blocks of the window changed while it read, or a series came in between its reads
(its statements are not one snapshot: compaction moved hot samples into blocks, or cut blocks
again, in between). `check()` is called
between blocks (the time limit, a cancel). Results match the SQL route's up to the order of
float additions (tests/warehouse/promql/test_native.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.kernel import blocks
from warehouse.kernel.block_columns import Runs
from warehouse.promql import native_steps, source
from warehouse.promql.context import ms
from warehouse.promql.labels import without as without_sql
from warehouse.promql.plan import Grid, text
from warehouse.promql.text import seconds_text, values_text
from warehouse.tsdb import cold_scan
from warehouse.tsdb.relations import BLOCKS, HOT, SERIES

#: Off, every query takes the SQL route (the tests compare the two).
ENABLED = True
#: The most series x steps (plus a window's steps) the arrays may hold: a few arrays of 8 B
#: a cell, ~100-150 MB at most, which DuckDB's memory limit does not see (a day of 1,000 GPUs
#: at 60 s steps is 1.44M cells; more goes the SQL way, within the limit).
MAX_CELLS = 4_000_000
#: Blocks fetched and decoded at a time (their compressed bytes held meanwhile).
BLOCKS_AT_ONCE = 16
AGGREGATES = frozenset({"sum", "avg", "min", "max", "count"})
OVER_TIME = frozenset(
    {"sum_over_time", "avg_over_time", "min_over_time", "max_over_time", "count_over_time"}
)

#: Runs a statement with its named parameters (`$name`) in the caller's session.
Run = Callable[[str, dict[str, Any]], pa.Table]


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


class Fallback(Exception):
    """The fast path does not answer this query: the SQL route does (`run` may raise it)."""


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


#: The window's bounds in a statement: the parameters of `_window_params`.
_LO, _HI = "make_timestamptz($lo_us)", "make_timestamptz($hi_us)"


def _window(native: Native) -> tuple[int, int]:
    """The sample times read, in ms: [lo, hi]."""
    g, shape = native.grid, native.shape
    reach = shape.range_ms if shape.function else native.lookback_ms
    return g.start_ms - shape.offset_ms - reach, g.end_ms - shape.offset_ms


def _window_params(native: Native) -> dict[str, Any]:
    lo, hi = _window(native)
    return {"lo_us": lo * 1000, "hi_us": hi * 1000}


def _series(native: Native, run: Run) -> tuple[pa.Table, list[int]]:
    """The selected series (`sid`, sorted, and `g`, the labels of their group), and the
    blocks of the metric the window's statistics keep (refused, before any is read, when they
    hold more than `cold_scan.BUDGET` samples)."""
    shape = native.shape
    groups = [list(group) for group in shape.groups]
    metric, window = text(shape.metric), f"ts BETWEEN {_LO} AND {_HI}"
    if shape.labels is None:
        group = "'{}'"
    elif shape.without:
        group = f"to_json({without_sql(list(shape.labels), source.GPU_LABELS)})::VARCHAR"
    else:
        names = sorted(set(shape.labels))
        group = "[" + ", ".join(source.gpu_label(n) for n in names) + "]"
    table = run(
        f"SELECT r.series_id AS sid, {group} AS g,\n"
        f"  (SELECT count(*) FROM prom_samples WHERE metric = {metric} AND {window}) AS prom,\n"
        f"  (SELECT count(*) FROM wanka.stale_markers WHERE metric = {metric} AND {window})"
        f" AS marks,\n"
        f"  (SELECT coalesce(sum(samples), 0) {_blocks(native)}) AS held,\n"
        f"  ({_kept(native)}) AS kept\n"
        f"FROM {SERIES} r\n"
        f"WHERE r.metric = {metric} AND ({source._gpu_wanted(groups)})\n"
        f"ORDER BY r.series_id",
        _window_params(native),
    )
    if not table.num_rows:
        raise Fallback  # none here; prom_samples may hold some
    prom, marks, held, kept = (table[c][0].as_py() for c in ("prom", "marks", "held", "kept"))
    if prom or marks or held > cold_scan.BUDGET:
        raise Fallback
    return table.select(["sid", "g"]), kept or []


def _groups(native: Native, table: pa.Table) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The series' ids, their groups' labels JSON, and each one's group index."""
    shape = native.shape
    sids = table["sid"].to_numpy().astype(np.int64)
    found = table["g"].to_pylist()
    if shape.labels is not None and not shape.without:
        names = sorted(set(shape.labels))
        found = [tuple(vs) for vs in found]  # a label set is written once per group
        texts = {
            vs: _json({n: v for n, v in zip(names, vs, strict=True) if v}) for vs in set(found)
        }
        found = [texts[vs] for vs in found]
    keys, index = np.unique(np.asarray(found, dtype=object), return_inverse=True)
    return sids, [str(k) for k in keys], index.astype(np.int64)


def _blocks(native: Native) -> str:
    """FROM and WHERE of the metric's blocks whose samples may lie in the window."""
    metric = text(native.shape.metric)
    return f"FROM {BLOCKS} WHERE metric = {metric} AND ts_max >= {_LO} AND ts_min <= {_HI}"


def _kept(native: Native) -> str:
    """The SELECT of the ids of those blocks, in order."""
    return f"SELECT list(block_id ORDER BY block_id) {_blocks(native)}"


def _json(labels: dict[str, str]) -> str:
    return json.dumps(labels, sort_keys=True, separators=(",", ":"))


def _fetched(
    native: Native, run: Run, ids: list[int], check: Callable[[], None]
) -> Iterator[bytes]:
    """The compressed bytes of the blocks `ids`, in order, `BLOCKS_AT_ONCE` at a time."""
    chosen = (
        f"SELECT data FROM {BLOCKS} WHERE metric = {text(native.shape.metric)} "
        f"AND list_contains($ids, block_id) ORDER BY block_id"
    )
    for at in range(0, len(ids), BLOCKS_AT_ONCE):
        check()
        yield from run(chosen, {"ids": ids[at : at + BLOCKS_AT_ONCE]})["data"].to_pylist()


def _present(
    native: Native, run: Run, sids: np.ndarray, ids: list[int], most: int, check: Callable[[], None]
) -> np.ndarray:
    """Which of the selected series `sids` have a run in the blocks `ids` or a hot sample in
    the window; Fallback as soon as the blocks alone hold more than `most` of them.

    A metric whose label sets change with every job (a GPU's series per job it ran) has many
    more series than a window holds: a day of 10,000 GPUs had 66,849 of one metric, and 6
    hours of it 31,768. The cells are sized by those present, found before their groups are
    (a block's series ids are a section of their own, decoded alone)."""
    found = []
    for data in _fetched(native, run, ids, check):
        try:
            found.append(blocks.run_series(data).astype(np.int64))
        except ValueError:
            raise Fallback from None
    if found and int(np.isin(sids, np.concatenate(found)).sum()) > most:
        raise Fallback  # the hot samples can only add to them
    hot = run(
        f"SELECT DISTINCT series_id AS sid FROM {HOT} WHERE ts BETWEEN {_LO} AND {_HI} "
        f"AND series_id IN (SELECT series_id FROM {SERIES} "
        f"WHERE metric = {text(native.shape.metric)}) LIMIT {most + 1}",  # enough to refuse
        _window_params(native),
    )
    if hot.num_rows > most:
        raise Fallback
    found.append(hot["sid"].to_numpy().astype(np.int64))
    return np.isin(sids, np.concatenate(found))


def _parts(
    native: Native,
    run: Run,
    sids: np.ndarray,
    ids: list[int],
    check: Callable[[], None],
    absent: np.ndarray,
) -> Any:
    """The selected series' samples of the window, block by block, then the hot ones: each
    as (rank of each run's series, run lengths, times in µs by series run, values), runs in
    series order. `absent`: selected series `_present` found no sample of; one that has a hot
    sample now came in since, and the SQL route answers."""
    lo = _window(native)[0]
    rank_of = np.full(int(max(sids[-1], absent.max(initial=0))) + 2, -1, dtype=np.int64)
    rank_of[sids] = np.arange(len(sids))
    rank_of[absent] = -2
    # decoded here: decoding ahead on threads measured slower (29.8 against 25.5 ms a query)
    for block_ids, runs, ts, values in map(_decoded, _fetched(native, run, ids, check)):
        yield rank_of[np.minimum(block_ids, len(rank_of) - 1)], runs.astype(np.int64), ts, values
    check()
    # the hot samples, and in the same statement (one snapshot) a row of NULLs if the blocks
    # are no longer those listed: moved or cut again since, the answer would miss samples
    hot = run(
        f"SELECT s.series_id AS sid, epoch_us(s.ts) AS ts, s.value AS v FROM {HOT} s\n"
        f"WHERE s.ts BETWEEN {_LO} AND {_HI} AND s.series_id IN (\n"
        f"  SELECT series_id FROM {SERIES} WHERE metric = {text(native.shape.metric)})\n"
        f"UNION ALL SELECT NULL, NULL, NULL\n"
        f"WHERE coalesce(({_kept(native)}), []::BIGINT[]) IS DISTINCT FROM $listed::BIGINT[]",
        {**_window_params(native), "listed": list(ids)},
    )
    if hot.num_rows:
        if hot["sid"].null_count or hot["v"].null_count:  # the SQL route reads one snapshot
            raise Fallback
        hid = rank_of[np.minimum(hot["sid"].to_numpy().astype(np.int64), len(rank_of) - 1)]
        if (hid == -2).any():
            raise Fallback
        chosen = hid >= 0  # of the metric's series, those the matchers select
        hid, ts, values = hid[chosen], hot["ts"].to_numpy()[chosen], hot["v"].to_numpy()[chosen]
        if not len(hid):
            return
        since = ts - lo * 1000
        if int(since.max()) < 1 << 42:  # by series, then time: a radix sort of one key
            order = np.argsort((hid << 42) + since, kind="stable")
        else:
            order = np.lexsort((ts, hid))
        hid, ts, values = hid[order], ts[order], values[order]
        starts = np.flatnonzero(np.diff(hid, prepend=-1))
        runs = np.diff(np.append(starts, len(hid)))
        yield hid[starts], runs, Runs.each(ts, runs), values


def _decoded(data: bytes) -> tuple[np.ndarray, np.ndarray, Runs, np.ndarray]:
    try:
        return blocks.decode_samples(data)
    except ValueError:  # a NULL value: the SQL route reads such a block
        raise Fallback from None


def _answer(native: Native, run: Run, check: Callable[[], None], max_series: int | None) -> bytes:
    g, shape = native.grid, native.shape
    n = g.last + 1
    table, kept = _series(native, run)
    m = shape.range_ms // g.step_ms if shape.function else 0
    sids = table["sid"].to_numpy().astype(np.int64)
    absent = sids[:0]
    if len(sids) * (n + m) > MAX_CELLS:  # sized by the series the window holds
        here = _present(native, run, sids, kept, MAX_CELLS // (n + m), check)
        if not here.any() or int(here.sum()) * (n + m) > MAX_CELLS:
            raise Fallback
        table, absent = table.filter(pa.array(here)), sids[~here]
    sids, keys, group = _groups(native, table)
    parts = _parts(native, run, sids, kept, check, absent)
    with np.errstate(invalid="ignore", over="ignore"):  # Inf - Inf is NaN, as in SQL
        if shape.function is None:
            values, present = native_steps.instants(
                g, shape.offset_ms, native.lookback_ms, parts, len(sids)
            )
        else:
            values, present = native_steps.over_time(
                g, shape.offset_ms, shape.range_ms, shape.function, parts, len(sids)
            )
        check()
        found, exists = native_steps.aggregate(shape.op, values, present, group, len(keys))
    if max_series is not None and int(exists.any(axis=1).sum()) > max_series:
        raise Fallback
    return _render(native, keys, found, exists)


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
