"""`*_over_time` functions that decompose (count, sum, avg, min, max, last, present) over step
buckets, for a window that is a whole number of steps.

A window of range R = m steps ends at each step's reference time t_k - offset and holds the
samples in [t_k - offset - R, t_k - offset], both ends closed (Prometheus 2.42). Bucket j holds
the samples in (t_{j-1} - offset, t_j - offset], so window k is buckets k-m+1 .. k plus the
samples lying exactly on its left end: those on the right end of bucket k-m. Each series'
samples are aggregated once per bucket (kept apart when they sit on a step), and each bucket
is spread over its m windows: buckets x m rows where spreading the samples themselves makes
samples x (m + 1), several times more whenever a step holds more than one scrape.
"""

from __future__ import annotations

from warehouse.promql.context import Context
from warehouse.promql.plan import Grid

#: Off, every window spreads its samples (the tests compare the two).
ENABLED = True

#: name -> (aggregates per bucket, aggregates of a window's buckets, value)
SPECS: dict[str, tuple[str, str, str]] = {
    "count_over_time": ("count(*) AS n", "sum(n) AS x", "x::DOUBLE"),
    "present_over_time": ("count(*) AS n", "sum(n) AS x", "1.0::DOUBLE"),
    "sum_over_time": ("sum(v) AS s", "sum(s) AS x", "x"),
    "avg_over_time": ("sum(v) AS s, count(*) AS n", "sum(s) AS s, sum(n) AS n", "s / n"),
    # NaN only when every value is NaN (Prometheus's comparison rule)
    "min_over_time": (
        "min(v) FILTER (WHERE NOT isnan(v)) AS a, min(v) AS b",
        "coalesce(min(a), min(b)) AS x",
        "x",
    ),
    "max_over_time": (
        "max(v) FILTER (WHERE NOT isnan(v)) AS a, max(v) AS b",
        "coalesce(max(a), max(b)) AS x",
        "x",
    ),
    "last_over_time": ("arg_max(v, ts) AS lv, max(ts) AS lt", "arg_max(lv, lt) AS x", "x"),
}


def applies(name: str, range_ms: int, grid: Grid) -> bool:
    """Whether `name` over a window of `range_ms` is evaluated by buckets of the grid's step:
    a decomposable function, over a window of two or more whole steps, on more than one."""
    step = grid.step_ms
    whole = range_ms % step == 0 and range_ms >= 2 * step
    return ENABLED and name in SPECS and grid.last > 0 and whole


def points(ctx: Context, samples: str, name: str, range_ms: int, offset_ms: int) -> str:
    """The CTE (sid, k, v) of `name` over `samples` (sid, ts, v, stale) in windows of
    `range_ms` ending at each step - `offset_ms`."""
    g = ctx.grid
    per_bucket, per_window, value = SPECS[name]
    m = range_ms // g.step_ms
    since = f"ts + {offset_ms} - {g.start_ms}"
    buckets = ctx.plan.add(
        "buckets",
        f"SELECT sid, j, edge, {per_bucket} FROM (\n"
        f"  SELECT sid, ts, v, ceil(({since}) / {g.step_ms})::BIGINT AS j,\n"
        f"    (({since}) % {g.step_ms} = 0)::INTEGER AS edge\n"
        f"  FROM {samples} WHERE NOT stale\n"
        f") WHERE j + {m} + edge > 0 AND j <= {g.last} GROUP BY sid, j, edge",
    )
    columns = ", ".join(
        part.rsplit(" AS ", 1)[1].strip() for part in _split(per_bucket)
    )  # the bucket aggregates' names, spread as they are
    return ctx.plan.add(
        name,
        f"SELECT sid, k, {value} AS v FROM (\n"
        f"  SELECT sid, k, {per_window} FROM (\n"
        f"    SELECT sid, unnest(range(greatest(j, 0), least(j + {m} + edge, {g.last + 1})))"
        f" AS k, {columns}\n"
        f"    FROM {buckets}\n"
        f"  ) GROUP BY sid, k\n)",
    )


def _split(aggregates: str) -> list[str]:
    """`aggregates` split at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(aggregates):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(aggregates[start:i])
            start = i + 1
    parts.append(aggregates[start:])
    return parts
