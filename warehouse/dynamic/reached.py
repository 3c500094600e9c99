"""After a joined table changed: recompute only the time buckets its changed rows can reach.

A join of telemetry with a table of intervals (job_gpu_usage_daily: gpu_metrics with
gpu_attribution) cannot find the groups an interval's change touches without reading every
sample (warehouse.dynamic.regroup.joined_side_is_costly), and a full refresh reads every sample
retention still holds: a week at 10,000 GPUs, for one job that started. But the query's own
conditions bound how early a changed row's samples can be (`f.ts >= a.start_at`:
warehouse.dynamic.plan.reach), and the samples written, updated or deleted since the
watermark say how early they are (the log of sample inserts, the change log). Every bucket
from the earliest of those on is recomputed whole, as a full refresh after retention does
(dml.held_full); the buckets before it hold no changed row, so they stay as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from warehouse.dynamic import retention
from warehouse.dynamic.catalog import DynamicTable
from warehouse.dynamic.dml import RefreshSql


def buckets_from(
    cur: duckdb.DuckDBPyConnection,
    dt: DynamicTable,
    sql: RefreshSql,
    touched: set[str],
    high: int,
) -> tuple[dict[str, Any], str] | None:
    """({'key': index, 'from': first bucket start}, the reason to record) when every changed
    joined table bounds how far back its rows reach; None when one does not (then the refresh
    is full). `touched`: the sources with new, updated or deleted rows since the watermark."""
    fact = dt.sources[0]
    joined = sorted(touched - {fact})
    if not joined or sql.fact_since is None:
        return None
    if any(table not in sql.reach for table in joined):
        return None
    found = retention.bucket_of(dt, fact)
    if found is None:
        return None
    window = {"lo": dt.watermark, "hi": high}
    earliest: list[datetime] = []
    for table in joined:
        row = sql.reach[table].row(cur, window)
        if row["open"]:
            return None
        if row["since"] is not None:
            earliest.append(row["since"])
    new = sql.fact_since.row(cur, window)["since"]
    if new is not None:
        earliest.append(new)
    if not earliest:
        return None
    index, key, written = found
    start = retention.bucket_start(cur, key, min(earliest))
    held = retention.held_range(cur, dt)
    kept = ""
    if held is not None and held[0]["from"] > start:
        start, kept = held[0]["from"], f"; {held[1]}"
    reason = (
        f"{', '.join(joined)} changed: recomputed the {written} buckets from "
        f"{start:%Y-%m-%d %H:%M %Z} on, the earliest its changed rows and the {fact} rows "
        f"changed since the last refresh reach; earlier buckets kept as they were{kept}"
    )
    return {"key": index, "from": start}, reason
