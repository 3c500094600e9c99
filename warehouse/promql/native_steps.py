"""The steps of the PromQL fast path (`native.py`) over decoded arrays: each series' point at
each step (the latest sample in the lookback, or a function over the step's window), then the
aggregation over the series of each group. Parts are (ranks, runs, times, values): series runs
ordered by time, each run's series as its rank among the selected series (-1: none), and their
times (µs) as `Runs`: the series of one scrape share their times, so the work that depends on
times alone is done once per distinct run."""

from __future__ import annotations

from typing import Any

import numpy as np

from warehouse.kernel.block_columns import Runs
from warehouse.promql.plan import Grid

_NO_TIME = np.iinfo(np.int64).min


def _bucket_of(g: Grid, offset_ms: int, ts: np.ndarray) -> np.ndarray:
    """Each sample's step bucket k: (t_{k-1} - offset, t_k - offset] (ceil), in µs."""
    step = g.step_ms * 1000
    first = (g.start_ms - offset_ms) * 1000
    return -((first - ts) // step)


def instants(
    g: Grid, offset_ms: int, lookback_ms: int, parts: Any, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """(value, present) per series and step: the latest sample within the lookback. Each
    distinct run of a part's times is searched for each step it can reach (a binary search of
    the step's time: distinct samples x 2 operations, then (distinct runs x steps) searches);
    its series runs take their samples at the positions found, and the newest of the parts'
    is kept."""
    n = g.last + 1
    step = g.step_ms * 1000
    first = (g.start_ms - offset_ms) * 1000
    lookback = lookback_ms * 1000
    times = np.full(count * n, _NO_TIME, dtype=np.int64)
    values = np.zeros(count * n)
    for ranks, runs, (which, lengths, kept), v in parts:
        if not len(kept):
            continue
        ends = np.cumsum(lengths)
        firsts = ends - lengths
        lo, hi = int(kept[firsts].min()), int(kept[ends - 1].max())  # each run is in order
        k_lo = max(0, -((first - lo) // step))  # the steps whose lookback meets the part
        k_hi = min(n - 1, (hi + lookback - first) // step)
        if k_lo > k_hi:
            continue
        span = hi - lo + 1
        offsets = np.arange(len(lengths), dtype=np.int64) * span
        key = kept + np.repeat(offsets - lo, lengths)
        reach = np.minimum(first + np.arange(k_lo, k_hi + 1, dtype=np.int64) * step - lo, span - 1)
        hits = np.searchsorted(key, (offsets[:, None] + reach[None, :]).ravel(), side="right")
        hits = hits.reshape(len(lengths), len(reach)) - 1  # in `kept`; before its run: none
        starts = np.cumsum(runs) - runs  # each series run's first sample, in `v`
        if len(lengths) == 1:  # every series run at the same times: a matrix of them
            rows, cols = np.flatnonzero(ranks >= 0), np.flatnonzero(hits[0] >= 0)
            hit = hits[0, cols]
            at = starts[rows, None] + hit[None, :]  # in `v`
            cell = (ranks[rows] * n)[:, None] + (k_lo + cols)[None, :]
            found = np.broadcast_to(kept[hit], cell.shape)
        else:
            rows, cols = np.nonzero((hits >= firsts[:, None])[which] & (ranks >= 0)[:, None])
            hit = hits[which[rows], cols]
            at = starts[rows] + hit - firsts[which[rows]]  # in `v`
            cell = ranks[rows] * n + k_lo + cols
            found = kept[hit]
        newer = found > times[cell]
        times[cell[newer]] = found[newer]
        values[cell[newer]] = v[at[newer]]
    latest = times.reshape(count, n)
    step_us = first + np.arange(n, dtype=np.int64) * step
    present = (latest != _NO_TIME) & (latest >= step_us - lookback)
    return values.reshape(count, n), present


def _slide(a: np.ndarray, m: int, n: int, op: Any) -> np.ndarray:
    """op over columns k+1 .. k+m of `a` for k in 0..n-1, by spans of doubling width."""
    result: np.ndarray | None = None
    at, size, span = 1, 1, a
    while m:
        if m & 1:
            piece = span[:, at : at + n]
            result = piece.copy() if result is None else op(result, piece)
            at += size
        m >>= 1
        if m:
            span = op(span[:, :-size], span[:, size:])
            size *= 2
    assert result is not None
    return result


def _segments(
    g: Grid, offset_ms: int, m: int, ranks: np.ndarray, runs: np.ndarray, times: Runs
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A part's samples cut where their cell changes: each segment's start in the part's values,
    its cell ((series x (n + m) + bucket j + m) x 2 + on the step's edge) and whether that cell
    is one of the grid's. The cuts are found once per distinct run of times, then laid on each
    series run that has it."""
    which, lengths, kept = times
    width = g.last + 1 + m
    step = g.step_ms * 1000
    j = _bucket_of(g, offset_ms, kept) + m
    local = j * 2 + ((kept - (g.start_ms - offset_ms) * 1000) % step == 0)
    inside = (j >= 0) & (j < width)
    firsts = np.cumsum(lengths) - lengths
    cut = np.ones(len(kept), dtype=bool)
    cut[1:] = local[1:] != local[:-1]
    cut[firsts] = True
    seg = np.flatnonzero(cut)  # the distinct runs' segments, in `kept`
    seg_first = np.searchsorted(seg, firsts)
    per = np.diff(np.append(seg_first, len(seg)))[which]  # segments of each series run
    before = np.cumsum(per) - per
    pos = seg[np.repeat(seg_first[which] - before, per) + np.arange(int(per.sum()))]
    starts = np.repeat(np.cumsum(runs) - runs - firsts[which], per) + pos
    rank = np.repeat(ranks, per)
    return starts, rank * (width * 2) + local[pos], inside[pos] & (rank >= 0)


def over_time(
    g: Grid, offset_ms: int, range_ms: int, fn: str, parts: Any, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """(value, present) per series and step of `fn` (an `*_over_time`) over each step's
    window of `range_ms`."""
    n = g.last + 1
    m = range_ms // g.step_ms
    width = n + m  # bucket j + m for j in -m .. last
    cells = count * width * 2  # [.., 0]: inside the bucket, [.., 1]: on its step
    extremes = fn in ("min_over_time", "max_over_time")
    samples = np.zeros(cells, dtype=np.int64)
    total = np.zeros(cells if fn in ("sum_over_time", "avg_over_time") else 0)
    numbers = np.zeros(cells if extremes else 0, dtype=np.int64)
    low = np.full(cells if fn == "min_over_time" else 0, np.inf)
    high = np.full(cells if fn == "max_over_time" else 0, -np.inf)
    for ranks, runs, times, v in parts:
        if not len(v):
            continue
        starts, cell, keep = _segments(g, offset_ms, m, ranks, runs, times)
        at = cell[keep]
        samples[at] += np.diff(np.append(starts, len(v)))[keep]
        if len(total):
            total[at] += np.add.reduceat(v, starts)[keep]
        if extremes:
            nan = np.isnan(v)
            numbers[at] += np.add.reduceat((~nan).astype(np.int64), starts)[keep]
        if len(low):
            least = np.minimum.reduceat(np.where(nan, np.inf, v), starts)[keep]
            low[at] = np.minimum(low[at], least)
        if len(high):
            most = np.maximum.reduceat(np.where(nan, -np.inf, v), starts)[keep]
            high[at] = np.maximum(high[at], most)

    def window(a: np.ndarray, op: Any) -> np.ndarray:
        cells = a.reshape(count, width, 2)  # window k: buckets k+1 .. k+m, and the edge of k
        whole = op(cells[:, :, 0], cells[:, :, 1])
        found: np.ndarray = op(cells[:, :n, 1], _slide(whole, m, n, op))
        return found

    counted = window(samples, np.add)
    present = counted > 0
    if fn == "count_over_time":
        return counted.astype(np.float64), present
    if fn == "sum_over_time":
        return window(total, np.add), present
    if fn == "avg_over_time":
        return window(total, np.add) / np.maximum(counted, 1), present
    found = window(low, np.minimum) if fn == "min_over_time" else window(high, np.maximum)
    return np.where(window(numbers, np.add) > 0, found, np.nan), present


def aggregate(op: str, values: np.ndarray, present: np.ndarray, group: np.ndarray,
               groups: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(value, present) per group and step: `op` over the group's series present there."""
    order = np.argsort(group, kind="stable")
    starts = np.flatnonzero(np.diff(group[order], prepend=-1))
    values, present = values[order], present[order]
    count = np.add.reduceat(present.astype(np.int64), starts, axis=0)
    if op == "count":
        found = count.astype(np.float64)
    elif op in ("sum", "avg"):
        found = np.add.reduceat(np.where(present, values, 0.0), starts, axis=0)
        if op == "avg":
            found = found / np.maximum(count, 1)
    else:  # NaN only when every value is NaN, as Prometheus compares
        number = present & ~np.isnan(values)
        numbers = np.add.reduceat(number.astype(np.int64), starts, axis=0)
        if op == "min":
            best = np.minimum.reduceat(np.where(number, values, np.inf), starts, axis=0)
        else:
            best = np.maximum.reduceat(np.where(number, values, -np.inf), starts, axis=0)
        found = np.where(numbers > 0, best, np.nan)
    return found, count > 0
