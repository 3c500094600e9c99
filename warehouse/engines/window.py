"""Time windows of a dynamic table: which output rows a range of new telemetry can change.

A GROUP BY query whose groups include a time bucket of a time series' `ts` (`time_bucket
(INTERVAL, ts)` or `date_trunc(unit, ts)`) is refreshed on a lake by recomputing only the
buckets the new rows fall in: the query restricted to `ts` in [lo, hi) replaces the output
rows whose bucket is in [lo, hi). Rows of other buckets cannot change, because every output
row's bucket is a function of the `ts` of the rows it aggregates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import cast

import sqlglot
from sqlglot import exp

from warehouse.engines.spark_rewrites import bucket_width_s

_TRUNC_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


@dataclass(frozen=True)
class TimeWindow:
    """How to restrict a query to whole time buckets."""

    column: str  # the output column holding the bucket
    table: str  # the time series the bucket is taken from
    alias: str  # its name or alias in the query
    width_s: int  # bucket width, dividing a day

    def bounds(self, lo: datetime, hi: datetime) -> tuple[datetime, datetime]:
        """[start of lo's bucket, end of hi's bucket), epoch-aligned like DuckDB's buckets.

        >>> w = TimeWindow("hour", "gpu_metrics", "gpu_metrics", 3600)
        >>> a, b = w.bounds(datetime(2026, 1, 1, 1, 30, tzinfo=UTC),
        ...                 datetime(2026, 1, 1, 2, 0, tzinfo=UTC))
        >>> a.hour, b.hour
        (1, 3)
        """
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        start = int((lo - epoch).total_seconds()) // self.width_s * self.width_s
        end = (int((hi - epoch).total_seconds()) // self.width_s + 1) * self.width_s
        return epoch + timedelta(seconds=start), epoch + timedelta(seconds=end)

    def restrict(self, query: str, lo: datetime, hi: datetime) -> str:
        """`query` over the rows with `ts` in [lo, hi) only (DuckDB dialect)."""
        tree = cast(exp.Select, sqlglot.parse_one(query, read="duckdb"))
        ts = exp.column("ts", table=self.alias)
        within = exp.and_(
            exp.GTE(this=ts, expression=_timestamp(lo)),
            exp.LT(this=ts.copy(), expression=_timestamp(hi)),
        )
        return tree.where(within).sql("duckdb")

    def predicate(self, lo: datetime, hi: datetime) -> str:
        """The Delta predicate selecting the output rows of buckets in [lo, hi)."""
        column = '"' + self.column.replace('"', "") + '"'
        return f"{column} >= '{lo.isoformat()}' AND {column} < '{hi.isoformat()}'"


def _timestamp(moment: datetime) -> exp.Expression:
    return exp.cast(exp.Literal.string(moment.isoformat()), exp.DType.TIMESTAMPTZ)


def time_window(query: str, time_series: frozenset[str]) -> TimeWindow | None:
    """The query's time window, or None when whole-table recompute is the only safe refresh."""
    tree = sqlglot.parse_one(query, read="duckdb")
    if not isinstance(tree, exp.Select) or not tree.args.get("group"):
        return None
    if any(tree.args.get(k) for k in ("limit", "order", "distinct", "qualify")):
        return None
    if tree.find(exp.Window) or tree.find(exp.Subquery):
        return None
    tables = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    grouped = {g.sql("duckdb") for g in tree.args["group"].expressions}
    for projection in tree.selects:
        inner = projection.unalias()
        found = _bucket(inner)
        if found is None or (
            inner.sql("duckdb") not in grouped and not _positional(tree, projection)
        ):
            continue
        column, width = found
        alias = column.table or (next(iter(tables)) if len(tables) == 1 else "")
        table = tables.get(alias, "")
        if column.name == "ts" and table in time_series and 86400 % width == 0:
            return TimeWindow(projection.alias_or_name, table, alias, width)
    return None


def _positional(tree: exp.Select, projection: exp.Expr) -> bool:
    """Grouped by its position (GROUP BY 1) or by GROUP BY ALL (it holds no aggregate)."""
    if tree.args["group"].args.get("all"):
        return not projection.find(exp.AggFunc)
    position = tree.selects.index(projection) + 1
    return any(
        isinstance(g, exp.Literal) and g.name == str(position)
        for g in tree.args["group"].expressions
    )


def _bucket(node: exp.Expr) -> tuple[exp.Column, int] | None:
    """(time column, width s) of `time_bucket(INTERVAL, col)` / `date_trunc('unit', col)`."""
    bare = isinstance(node, exp.DateBin) and node.args.get("unit") is None
    if bare and isinstance(node.expression, exp.Column):
        width = bucket_width_s(node.this)
        return (node.expression, width[0]) if width else None
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc) and isinstance(node.this, exp.Column):
        unit = node.text("unit").lower()
        if unit in _TRUNC_S:
            return node.this, _TRUNC_S[unit]
    return None
