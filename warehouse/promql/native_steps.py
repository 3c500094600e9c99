"""The steps of the PromQL fast path (`native.py`) over decoded arrays: each series' point at
each step (the latest sample in the lookback, or a function over the step's window), then the
aggregation over the series of each group. Parts are (ranks, runs, ts µs, values): series runs
ordered by time, each run's series as its rank among the selected series (-1: none)."""

from __future__ import annotations

from typing import Any

import numpy as np

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
    """(value, present) per series and step: the latest sample within the lookback. Each part's
    latest sample at or before each step it can reach is found by a binary search of the
    step's time in its series' run (samples x 2 operations, then (series x steps) searches),
    and the newest of the parts' is kept."""
    n = g.last + 1
    step = g.step_ms * 1000
    first = (g.start_ms - offset_ms) * 1000
    lookback = lookback_ms * 1000
    times = np.full(count * n, _NO_TIME, dtype=np.int64)
    values = np.zeros(count * n)
    for ranks, runs, ts, v in parts:
        if not len(ts):
            continue
        ends = np.cumsum(runs)
        lo, hi = int(ts[ends - runs].min()), int(ts[ends - 1].max())  # each run is in order
        k_lo = max(0, -((first - lo) // step))  # the steps whose lookback meets the part
        k_hi = min(n - 1, (hi + lookback - first) // step)
        if k_lo > k_hi:
            continue
        span = hi - lo + 1
        key = ts + np.repeat(np.arange(len(runs), dtype=np.int64) * span - lo, runs)
        reach = np.minimum(first + np.arange(k_lo, k_hi + 1, dtype=np.int64) * step - lo, span - 1)
        asked = (np.arange(len(runs), dtype=np.int64) * span)[:, None] + reach[None, :]
        hits = np.searchsorted(key, asked.ravel(), side="right").reshape(asked.shape) - 1
        found = (hits >= (ends - runs)[:, None]) & (ranks >= 0)[:, None]
        rows, cols = np.nonzero(found)
        at = hits[rows, cols]
        cell = ranks[rows] * n + k_lo + cols
        newer = ts[at] > times[cell]
        times[cell[newer]] = ts[at[newer]]
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
    step = g.step_ms * 1000
    first = (g.start_ms - offset_ms) * 1000
    for ranks, runs, ts, v in parts:
        j = _bucket_of(g, offset_ms, ts) + m
        edge = (ts - first) % step == 0
        rank = np.repeat(ranks, runs)
        idx = (rank * width + j) * 2 + edge
        keep = (j >= 0) & (j < width) & (rank >= 0)
        if not keep.all():
            idx, v = idx[keep], v[keep]
        if not len(idx):
            continue
        starts = np.flatnonzero(np.diff(idx, prepend=-1))
        cell = idx[starts]
        samples[cell] += np.diff(np.append(starts, len(idx)))
        if len(total):
            total[cell] += np.add.reduceat(v, starts)
        if extremes:
            nan = np.isnan(v)
            numbers[cell] += np.add.reduceat((~nan).astype(np.int64), starts)
        if len(low):
            low[cell] = np.minimum(low[cell], np.minimum.reduceat(np.where(nan, np.inf, v), starts))
        if len(high):
            high[cell] = np.maximum(
                high[cell], np.maximum.reduceat(np.where(nan, -np.inf, v), starts)
            )

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
