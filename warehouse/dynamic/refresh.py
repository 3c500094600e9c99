"""One refresh of one dynamic table, in one transaction.

The refresh reads the high watermark (the highest batch id of its sources, or of a logged
update/delete on them), applies the plan's delta for batch ids in (watermark, high] — or the
whole query when the plan is full, when FULL was asked for, or when a source was updated or
deleted from since the watermark (the reason is recorded, never silent) — and records the
refresh in wanka.dynamic_tables and wanka.refresh_history before COMMIT. A failure rolls the
data back and is recorded afterwards, in a transaction of its own, with state 'failed'.

Known limit: batch ids are taken when a write starts, so a write that commits after a refresh
that saw a newer batch id is not seen incrementally; ingest and refresh run one at a time here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb
from sqlglot import exp

from warehouse.dynamic import catalog, history
from warehouse.dynamic.catalog import DynamicTable
from warehouse.dynamic.history import RefreshResult
from warehouse.dynamic.plan import TRACKED, state_table
from warehouse.errors import UserError, WankaError
from warehouse.query import one_line


def _quoted(name: str, schema: str | None = None) -> str:
    db = exp.to_identifier(schema) if schema else None
    return exp.Table(this=exp.to_identifier(name, quoted=True), db=db).sql("duckdb")


def visible_table(name: str) -> str:
    """`main."<name>"`: the table people query."""
    return _quoted(name, "main")


def _count(cur: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> int:
    rows = cur.execute(sql, params).fetchall() if params else cur.execute(sql).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def high_watermark(cur: duckdb.DuckDBPyConnection, dt: DynamicTable) -> tuple[int, str | None]:
    """The batch id this refresh brings the table up to, and an update/delete seen since."""
    tracked = [s for s in dt.sources if s in TRACKED]
    high = dt.watermark
    for source in tracked:
        high = max(high, _count(cur, f"SELECT max(batch_id) FROM {_quoted(source)}"))
    rows = cur.execute(
        "SELECT table_name, kind, sum(rows), max(seq) FROM wanka.table_changes "
        "WHERE table_name = ANY(?) AND seq > ? GROUP BY ALL ORDER BY 1, 2",
        [tracked, dt.watermark],
    ).fetchall()
    change = None
    for table, kind, count, seq in rows:
        high = max(high, int(seq))
        change = change or (
            f"{kind} of {count} rows on {table} since the last refresh: updated and deleted "
            "rows are not tracked one by one yet, so this refresh recomputed the whole table"
        )
    return high, change


def _full(cur: duckdb.DuckDBPyConnection, dt: DynamicTable, high: int) -> tuple[int, int]:
    target = visible_table(dt.name)
    deleted = _count(cur, f"DELETE FROM {target}")
    inserted = _count(cur, f"INSERT INTO {target} {dt.plan.query}")
    if dt.plan.kind == "aggregate" and dt.plan.state_sql:
        state = state_table(dt.name).sql("duckdb")
        cur.execute(f"DELETE FROM {state}")
        cur.execute(
            f"INSERT INTO {state} SELECT *, CAST($hi AS BIGINT) AS __wm FROM ({dt.plan.state_sql})",
            {"hi": high},
        )
    return inserted, deleted


def _incremental(cur: duckdb.DuckDBPyConnection, dt: DynamicTable, high: int) -> tuple[int, int]:
    plan, target = dt.plan, visible_table(dt.name)
    window = {"lo": dt.watermark, "hi": high}
    if plan.kind == "append":
        assert plan.delta_sql is not None
        return _count(cur, f"INSERT INTO {target} {plan.delta_sql}", window), 0
    assert plan.merge_sql is not None and plan.visible_sql is not None
    cur.execute(plan.merge_sql, window)
    columns = [d[0] for d in cur.execute(f"SELECT * FROM {target} LIMIT 0").description]
    keys = [f"k{i}" for i in range(len(plan.key_positions))]
    match = " AND ".join(
        exp.NullSafeEQ(
            this=exp.column(columns[p], "v", quoted=True), expression=exp.column(k, "d")
        ).sql("duckdb")
        for p, k in zip(plan.key_positions, keys, strict=True)
    )
    state = state_table(dt.name).sql("duckdb")
    touched = f"SELECT {', '.join(keys)} FROM {state} WHERE __wm = $hi"
    deleted = _count(
        cur, f"DELETE FROM {target} AS v USING ({touched}) AS d WHERE {match}", {"hi": high}
    )
    inserted = _count(cur, f"INSERT INTO {target} {plan.visible_sql}", {"hi": high})
    return inserted, deleted


def _apply(
    cur: duckdb.DuckDBPyConnection, name: str, full: bool, started: datetime
) -> RefreshResult:
    dt = catalog.load(cur, name)
    data_ts = cur.execute("SELECT now()").fetchall()[0][0]
    high, change = high_watermark(cur, dt)
    reason: str | None
    if full:
        mode, reason = "full", "a full refresh was asked for"
    elif dt.plan.kind == "full":
        mode, reason = "full", dt.plan.reason
    elif change:
        mode, reason = "full", change
    elif high == dt.watermark:
        mode, reason = "no_data", None
    else:
        mode, reason = "incremental", None
    inserted = deleted = 0
    if mode == "full":
        inserted, deleted = _full(cur, dt, high)
    elif mode == "incremental":
        inserted, deleted = _incremental(cur, dt, high)
    lag_s = (datetime.now(UTC) - data_ts).total_seconds()
    catalog.update(
        cur,
        name,
        last_refresh_at=datetime.now(UTC),
        data_timestamp=data_ts,
        watermark=high,
        lag_s=lag_s,
        state="active",
        error=None,
    )
    return RefreshResult(name, mode, reason, inserted, deleted, started, data_ts)


def refresh(cur: duckdb.DuckDBPyConnection, name: str, *, full: bool = False) -> RefreshResult:
    """Refresh `name` once, in one transaction; a failure is recorded and raised."""
    started = datetime.now(UTC)
    cur.execute("BEGIN TRANSACTION")
    try:
        result = _apply(cur, name, full, started)
        history.record(cur, result)
        cur.execute("COMMIT")
        return result
    except UserError:
        cur.execute("ROLLBACK")
        raise
    except (duckdb.Error, WankaError) as error:
        cur.execute("ROLLBACK")
        message = one_line(str(error))
        _record_failure(cur, name, started, "full" if full else "incremental", message)
        raise WankaError(f"refresh of dynamic table {name} failed: {message}") from None


def _record_failure(
    cur: duckdb.DuckDBPyConnection, name: str, started: datetime, mode: str, message: str
) -> None:
    cur.execute("BEGIN TRANSACTION")
    catalog.update(cur, name, state="failed", error=message)
    failed = RefreshResult(name, mode, None, 0, 0, started, None, "failed", message)
    history.record(cur, failed)
    cur.execute("COMMIT")
