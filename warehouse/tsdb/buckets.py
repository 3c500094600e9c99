"""`time_bucket` over the telemetry views' time column, as integer arithmetic.

DuckDB's `time_bucket(width, TIMESTAMPTZ)` goes through ICU, the time-zone library, for every
row, even where the width is fixed (hours, minutes, days) and the buckets come out the same in
every time zone: counted in UTC from 2000-01-03 00:00 (the test below checks it). On a day of
10,000 GPUs' power, that call was the largest part of "per host per hour" (bench_cold_reads'
questions). The same bucket, as microseconds since the epoch, is

    make_timestamptz(e - ((e - origin) % width + width) % width),  e = epoch_us(ts)

(`%` keeps the sign of `e - origin`, hence the second `% width`, so times before the origin
fall into the bucket below them as time_bucket's do). `coalesce(…, ts)` keeps `infinity`
and `-infinity`, which time_bucket returns as they are and epoch_us as NULL.

`rewrite` does this in one SELECT, for the calls of two arguments whose width is a constant
of days or of time, not months (a month has no fixed width), and whose timestamp is the time
column of a view it reads (`ts` of gpu_metrics, `bucket` of a tier), so known TIMESTAMPTZ.
tests/warehouse/tsdb/test_buckets.py checks it against DuckDB's time_bucket in several
time zones.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import duckdb
from sqlglot import exp

from warehouse.kernel import scratch

#: time_bucket's origin for widths of days or time: 2000-01-03 00:00 UTC, in µs.
ORIGIN_US = 946_857_600_000_000

#: time_bucket's third argument (an origin, offset or time zone), as sqlglot holds it.
_MORE = ("unit", "zone", "origin")


def rewrite(select: exp.Select, column_of: Callable[[exp.Expr], str | None]) -> bool:
    """Rewrite, in place, the time_bucket calls of `select` (not of its subqueries) whose
    timestamp is the view's time column (for which `column_of` gives "ts"); whether any was.
    (`warehouse.tsdb.names` keeps the result's column names.)"""
    found = [(c, w) for c in _calls(select) if (w := _width_of(c, column_of)) is not None]
    for call, width in found:
        column = call.expression.sql(dialect="duckdb")
        call.replace(exp.maybe_parse(expression(column, width), dialect="duckdb"))
    return bool(found)


def _width_of(call: exp.DateBin, column_of: Callable[[exp.Expr], str | None]) -> int | None:
    if any(call.args.get(k) for k in _MORE) or column_of(call.expression) != "ts":
        return None
    return width_us(call.this)


def expression(column: str, width: int) -> str:
    """The bucket of `column` (TIMESTAMPTZ) `width` µs wide, as SQL."""
    e = f"epoch_us({column})"
    return (
        f"coalesce(make_timestamptz({e} - (({e} - {ORIGIN_US}) % {width} + {width}) % {width}), "
        f"{column})"
    )


def width_us(node: exp.Expr | None) -> int | None:
    """The width of `node`, a constant INTERVAL, in µs; None when it is not one, holds
    months, or mixes days and time (which time_bucket refuses)."""
    if not isinstance(node, exp.Interval | exp.Cast) or any(
        isinstance(n, exp.Column | exp.Placeholder | exp.Parameter) for n in node.walk()
    ):
        return None
    return _width(node.sql(dialect="duckdb"))


@lru_cache(maxsize=256)
def _width(sql: str) -> int | None:
    try:
        row = (
            scratch.cursor()
            .execute(
                "SELECT typeof(i), datepart('year', i) * 12 + datepart('month', i), "
                f"datepart('day', i), epoch_us(i) FROM (SELECT {sql} AS i)"
            )
            .fetchone()
        )
    except duckdb.Error:
        return None
    if row is None or row[0] != "INTERVAL":
        return None
    months, days, total = row[1], row[2], row[3]
    time = total - days * 86_400_000_000
    if months or total <= 0 or (days and time):
        return None
    return int(total)


def _calls(select: exp.Select) -> list[exp.DateBin]:
    """time_bucket calls (sqlglot's DateBin) within `select`'s own clauses, not within a
    nested SELECT."""
    inner = lambda n: n is not select and isinstance(n, exp.Select)  # noqa: E731
    return [n for n in select.walk(prune=inner) if isinstance(n, exp.DateBin)]
