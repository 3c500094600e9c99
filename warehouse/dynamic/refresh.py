"""One refresh of one dynamic table, in one transaction.

The refresh reads the high watermark (the highest batch id of its sources, or of a logged
update/delete on them), applies the plan's delta for batch ids in (watermark, high] — for a
'groups' plan, or an 'aggregate' plan whose source saw an update or delete since the watermark,
it recomputes only the affected groups (warehouse.dynamic.regroup); the whole query when the
plan is full, when FULL was asked for, when an append plan's source was updated or deleted
from, or when the affected groups are at least half of a large table's groups, where a full
refresh is the cheaper (regroup.full_is_cheaper); the reason is recorded, never silent — and
records the refresh in wanka.dynamic_tables and wanka.refresh_history before COMMIT, then trims
the change logs every dynamic table has seen. A failure rolls the data back and is recorded
afterwards, in a transaction of its own, with state 'failed'. The trim is skipped when the
probe found no logged change since the watermark: there is then nothing this refresh unblocks.

Batch ids are taken when a write starts, so a write that commits after a refresh that saw a
newer batch id would not be seen incrementally. Writes and refreshes therefore never overlap:
the CLI holds the database file alone, and `wanka serve` passes every write and refresh through
one gate (service/writes.py; a transaction that wrote keeps it until it ends).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import duckdb
from sqlglot import exp

from warehouse.dynamic import catalog, history
from warehouse.dynamic.catalog import DynamicTable
from warehouse.dynamic.history import RefreshResult
from warehouse.dynamic.plan import TRACKED, state_table
from warehouse.dynamic.regroup import (
    affected_groups,
    can_recompute,
    count_rows,
    delete_keys_sql,
    full_is_cheaper,
    joined_side_is_costly,
    recompute_groups,
    trim_changes,
)
from warehouse.errors import UserError, WankaError
from warehouse.query import one_line


def _quoted(name: str, schema: str | None = None) -> str:
    db = exp.to_identifier(schema) if schema else None
    return exp.Table(this=exp.to_identifier(name, quoted=True), db=db).sql("duckdb")


def visible_table(name: str) -> str:
    """`main."<name>"`: the table people query."""
    return _quoted(name, "main")


def _probe(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable
) -> tuple[datetime, int, str | None, str | None, set[str]]:
    """In one statement: the transaction's now(), the high watermark, a change seen, a reload,
    and the sources with new, updated or deleted rows.

    The high watermark is the batch id this refresh brings the table up to. Batch ids grow in
    insertion order, so `batch_id > watermark` lets DuckDB's zone maps skip every row group
    older than the last refresh: the new maximum of a source is read without scanning old rows.
    Updates and deletes since the watermark come from wanka.table_changes, as do the rows a
    source dynamic table's refresh inserted or deleted (warehouse.dynamic.chain) and reloads of
    reference tables (which no incremental plan can follow).
    """
    tracked = [s for s in dt.sources if s in TRACKED]
    maxima = "".join(
        f", (SELECT max(batch_id) FROM {_quoted(s)} WHERE batch_id > $wm)" for s in tracked
    )
    changes = (
        ", (SELECT list((table_name, kind, n, seq) ORDER BY table_name, kind) FROM ("
        "SELECT table_name, kind, sum(rows) AS n, max(seq) AS seq FROM wanka.table_changes "
        "WHERE seq > $wm AND list_contains($sources, table_name) GROUP BY ALL))"
    )
    row = cur.execute(
        f"SELECT now(){changes}{maxima}", {"wm": dt.watermark, "sources": dt.sources}
    ).fetchall()[0]
    data_ts, found, highs = row[0], row[1] or [], row[2:]
    high = max([dt.watermark, *(int(v) for v in highs if v is not None)])
    touched = {s for s, v in zip(tracked, highs, strict=True) if v is not None}
    change = reload = None
    for item in found:
        table, kind, count, seq = item.values() if isinstance(item, dict) else item
        touched.add(table)
        high = max(high, int(seq))
        change = change or f"{kind} of {count} rows on {table} since the last refresh"
        if kind == "reload":
            reload = f"reference table {table} was reloaded (a new wanka release): recomputed"
    return data_ts, high, change, reload, touched


def _full(cur: duckdb.DuckDBPyConnection, dt: DynamicTable, high: int) -> tuple[int, int]:
    target = visible_table(dt.name)
    deleted = count_rows(cur, f"DELETE FROM {target}")
    inserted = count_rows(cur, f"INSERT INTO {target} {dt.plan.query}")
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
        return count_rows(cur, f"INSERT INTO {target} {plan.delta_sql}", window), 0
    assert plan.merge_sql is not None and plan.visible_sql is not None
    cur.execute(plan.merge_sql, window)
    deleted = count_rows(cur, _delete_touched_sql(cur, dt), {"hi": high})
    inserted = count_rows(cur, f"INSERT INTO {target} {plan.visible_sql}", {"hi": high})
    return inserted, deleted


def _delete_touched_sql(cur: duckdb.DuckDBPyConnection, dt: DynamicTable) -> str:
    """DELETE of the visible rows of the groups this refresh merged into the state."""
    keys = ", ".join(f"k{i}" for i in range(len(dt.plan.key_positions)))
    touched = f"SELECT {keys} FROM {state_table(dt.name).sql('duckdb')} WHERE __wm = $hi"
    return delete_keys_sql(cur, dt, visible_table(dt.name), touched)


def _apply(
    cur: duckdb.DuckDBPyConnection, name: str, full: bool, started: datetime
) -> RefreshResult:
    dt = catalog.load(cur, name)
    data_ts, high, change, reload, touched = _probe(cur, dt)
    reason: str | None
    inserted = deleted = 0
    if full:
        mode, reason = "full", "a full refresh was asked for"
    elif dt.plan.kind == "full":
        mode, reason = "full", dt.plan.reason
    elif reload:
        mode, reason = "full", reload
    elif change and not can_recompute(dt):
        mode, reason = (
            "full",
            (
                f"{change}: this plan cannot take rows back one by one, so this refresh "
                "recomputed the whole table"
            ),
        )
    elif joined := joined_side_is_costly(cur, dt, touched):
        mode, reason = "full", joined
    elif change or (dt.plan.kind == "groups" and high != dt.watermark):
        if dt.plan.fact_only and touched <= {dt.sources[0]}:
            only = dt.plan.fact_only
            fact_only = replace(
                dt.plan,
                affected_sql=only["affected_sql"],
                groups_sql=only["groups_sql"],
                bounds_sql=only["bounds_sql"],
            )
            dt = replace(dt, plan=fact_only)
        target = visible_table(dt.name)
        affected = affected_groups(cur, dt, high)
        cheaper = full_is_cheaper(cur, dt, target, affected[0])
        if cheaper is not None:
            mode, reason = "full", cheaper
        else:
            mode = "incremental"
            inserted, deleted, groups = recompute_groups(cur, dt, target, high, affected)
            done = f"recomputed the {groups} groups those rows belong to"
            reason = f"{change}: {done}" if change else None
    elif high == dt.watermark:
        mode, reason = "no_data", None
    else:
        mode, reason = "incremental", None
        inserted, deleted = _incremental(cur, dt, high)
    if mode == "full":
        inserted, deleted = _full(cur, dt, high)
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
    if change:
        # log rows are trimmable only once this refresh has seen some: with none since the
        # watermark, the last refresh that saw them already trimmed what every table has seen
        trim_changes(cur, [s for s in dt.sources if s in TRACKED or s in catalog.names(cur)])
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
