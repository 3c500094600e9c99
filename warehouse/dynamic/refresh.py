"""One refresh of one dynamic table, in one transaction.

The refresh reads the high watermark (the highest batch id of its sources, or of a logged
update/delete on them) and runs its plan (`warehouse.dynamic.plan.kinds`) for batch ids in
(watermark, high], with the statements `warehouse.dynamic.dml` built for it: an `Append` inserts
the delta's rows; an `Aggregate` merges the pre-aggregated delta into its state and rewrites the
touched groups; a `Groups` plan — or an `Aggregate` whose source saw an update or delete since the
watermark — recomputes only the affected groups (warehouse.dynamic.regroup); a `Full` plan
recomputes the whole query, as does FULL, an append plan whose source was updated or deleted
from, a reload of a reference table, or affected groups that are most of a large table's,
where a full refresh is the cheaper. The reason is recorded, never silent. Then the refresh is
recorded in wanka.dynamic_tables and wanka.refresh_history before COMMIT, and the change logs
every dynamic table has seen are trimmed (skipped when no change was logged since the
watermark: then there is nothing this refresh unblocks). A failure rolls the data back and is
recorded by its rollback handler (`history.record_failure`), whatever face asked for it.

Batch ids are taken when a write starts, so a write that commits after a refresh that saw a
newer batch id would not be seen incrementally. Writes and refreshes therefore never overlap:
the CLI holds the database file alone, and `wanka serve` passes every write and refresh through
one gate (service/serve/writes.py; a transaction that wrote keeps it until it ends).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from warehouse.dynamic import catalog, dml, history, reached, retention
from warehouse.dynamic.catalog import DynamicTable
from warehouse.dynamic.dml import RefreshSql, visible_table
from warehouse.dynamic.history import Failure, RefreshResult
from warehouse.dynamic.plan import Aggregate, Append, Full, Groups
from warehouse.dynamic.regroup import (
    affected_groups,
    full_is_cheaper,
    joined_side_is_costly,
    recompute_groups,
    trim_changes,
)
from warehouse.errors import UserError, WankaError, one_line
from warehouse.jobs import attribution
from warehouse.kernel.tables import TRACKED
from warehouse.kernel.transactions import transaction

__all__ = ["RefreshFailed", "catch_up", "pending", "refresh", "visible_table"]


class RefreshFailed(WankaError):
    """A refresh failed, was rolled back and was recorded as failed."""

    def __init__(self, message: str, failure: Failure) -> None:
        super().__init__(message)
        self.failure = failure


@dataclass(frozen=True)
class Probe:
    """What changed since the watermark, read in one statement at the refresh's start."""

    now: datetime  # the transaction's now(): the data timestamp unless one is given
    high: int  # the batch id this refresh brings the table up to
    change: str | None  # an update or delete since the watermark, said for people
    reload: str | None  # a reference table reloaded since the watermark
    touched: set[str]  # sources with new, updated or deleted rows
    changed: set[str]  # sources with updated or deleted rows (or reloaded)


def _probe(cur: duckdb.DuckDBPyConnection, dt: DynamicTable, sql: RefreshSql) -> Probe:
    """Batch ids grow in insertion order, so the new maximum of a source is read without scanning
    old rows (zone maps). Updates and deletes since the watermark come from wanka.table_changes,
    as do the rows a source dynamic table's refresh inserted or deleted (warehouse.dynamic.chain)
    and reloads of reference tables (which no incremental plan can follow)."""
    result = cur.execute(sql.probe.sql, {"wm": dt.watermark, "sources": dt.sources})
    row = result.fetchall()[0]
    now, found, highs = row[0], row[1] or [], row[2:]
    tracked = [s for s in dt.sources if s in TRACKED]
    high = max([dt.watermark, *(int(v) for v in highs if v is not None)])
    touched = {s for s, v in zip(tracked, highs, strict=True) if v is not None}
    changed: set[str] = set()
    change = reload = None
    for item in found:
        table, kind, count, seq = item.values() if isinstance(item, dict) else item
        touched.add(table)
        changed.add(table)
        high = max(high, int(seq))
        change = change or f"{kind} of {count} rows on {table} since the last refresh"
        if kind == "reload":
            reload = f"reference table {table} was reloaded (a new wanka release): recomputed"
    return Probe(now, high, change, reload, touched, changed)


def _decide(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, sql: RefreshSql, probe: Probe, full: bool
) -> tuple[str, str | None]:
    """('full' | 'regroup' | 'reach' | 'incremental' | 'no_data', the reason for a full
    refresh; 'reach': a joined table changed, `_reach`)."""
    plan = dt.plan
    if full:
        return "full", "a full refresh was asked for"
    if isinstance(plan, Full):
        return "full", plan.reason
    if probe.reload:
        return "full", probe.reload
    if probe.change and sql.regroup is None:
        cannot = "this plan cannot take rows back one by one, so this refresh recomputed"
        return "full", f"{probe.change}: {cannot} the whole table"
    # an aggregate plan finds the groups that rows inserted into a joined table touch through
    # them (few: a new node, GPU or job interval); only updates and deletes there go full
    dims = probe.changed if isinstance(plan, Aggregate) else probe.touched
    joined = joined_side_is_costly(cur, plan, sql, dims)
    if joined:
        return "reach", joined
    if probe.change or (isinstance(plan, Groups) and probe.high != dt.watermark):
        return "regroup", None
    if isinstance(plan, Aggregate) and probe.touched - {dt.sources[0]}:
        # rows inserted into a joined table may join fact rows the state already holds
        return "regroup", None
    return ("no_data" if probe.high == dt.watermark else "incremental"), None


def _full(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, sql: RefreshSql, high: int
) -> tuple[int, int, str | None]:
    """Recompute the table; where a source dropped old rows (retention), only the buckets it
    still holds whole, with the reason to add."""
    held = retention.held_range(cur, dt)
    if held is not None:
        inserted, deleted = _buckets_from(cur, dt, held[0], high)
        return inserted, deleted, held[1]
    deleted = sql.full.delete.run(cur, {})
    inserted = sql.full.insert.run(cur, {})
    for each in sql.state_full:
        each.run(cur, {"hi": high})
    return inserted, deleted, None


def _buckets_from(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, spec: dict[str, Any], high: int
) -> tuple[int, int]:
    """Recompute every bucket of key `spec['key']` from `spec['from']` on: (inserted, deleted)."""
    delete, insert, *state = dml.held_full(cur, dt.name, dt.plan, spec["key"])
    values = {"from": spec["from"], "hi": high}
    deleted, inserted = delete.run(cur, values), insert.run(cur, values)
    for each in state:
        each.run(cur, values)
    return inserted, deleted


def _reach(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, sql: RefreshSql, probe: Probe, why: str
) -> tuple[str, str | None, int, int]:
    """A joined table changed: the buckets its rows reach (warehouse.dynamic.reached), else all."""
    found = reached.buckets_from(cur, dt, sql, probe.touched, probe.high)
    if found is None:
        inserted, deleted, held = _full(cur, dt, sql, probe.high)
        return "full", _joined(why, held), inserted, deleted
    inserted, deleted = _buckets_from(cur, dt, found[0], probe.high)
    return "incremental", found[1], inserted, deleted


def _joined(reason: str | None, more: str | None) -> str | None:
    return f"{reason}; {more}" if reason and more else reason or more


def _incremental(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, sql: RefreshSql, window: dict[str, Any]
) -> tuple[int, int]:
    if isinstance(dt.plan, Append):
        assert sql.append is not None
        return sql.append.run(cur, window), 0
    assert isinstance(dt.plan, Aggregate) and sql.merge and sql.touched
    sql.merge.run(cur, window)
    deleted = sql.touched.delete.run(cur, window)
    return sql.touched.insert.run(cur, window), deleted


def _regroup(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, sql: RefreshSql, probe: Probe
) -> tuple[str, str | None, int, int]:
    """Recompute the affected groups, or refresh fully when that is the cheaper."""
    regroup = sql.regroup
    if sql.regroup_facts is not None and probe.touched <= {dt.sources[0]}:
        regroup = sql.regroup_facts  # only the facts changed: skip the other tables' branches
    assert regroup is not None
    window = {"lo": dt.watermark, "hi": probe.high}
    affected = affected_groups(cur, regroup, window)
    chained = bool(probe.touched) and probe.touched <= set(catalog.names(cur))
    cheaper = full_is_cheaper(cur, sql, affected[0], chained) or _before_held(cur, dt, affected[1])
    if cheaper is not None:
        inserted, deleted, held = _full(cur, dt, sql, probe.high)
        return "full", _joined(cheaper, held), inserted, deleted
    inserted, deleted, groups = recompute_groups(cur, regroup, window, affected)
    done = f"recomputed the {groups} groups those rows belong to"
    return "incremental", (f"{probe.change}: {done}" if probe.change else None), inserted, deleted


def _before_held(
    cur: duckdb.DuckDBPyConnection, dt: DynamicTable, bounds: dict[str, Any]
) -> str | None:
    """Why affected groups are not recomputed one by one: some lie where a source dropped rows
    (retention), and recomputing them from what is left would erase what they hold."""
    held = retention.held_range(cur, dt)
    if held is None:
        return None
    low = bounds.get(f"k{held[0]['key']}_lo")
    if low is None or low >= held[0]["from"]:
        return None
    return "changed rows fall in buckets whose source rows retention dropped"


def _apply(
    cur: duckdb.DuckDBPyConnection,
    name: str,
    full: bool,
    started: datetime,
    data_timestamp: datetime | None,
) -> RefreshResult:
    dt = catalog.load(cur, name)
    if "gpu_attribution" in dt.sources:
        attribution.sync_if_needed(cur)  # whole-node rows follow jobs and nodes first
    sql = dml.compile(cur, dt.name, dt.plan)
    probe = _probe(cur, dt, sql)
    mode, reason = _decide(cur, dt, sql, probe, full)
    inserted = deleted = 0
    if mode == "full":
        inserted, deleted, held = _full(cur, dt, sql, probe.high)
        reason = _joined(reason, held)
    elif mode == "regroup":
        mode, reason, inserted, deleted = _regroup(cur, dt, sql, probe)
    elif mode == "reach":
        assert reason is not None
        mode, reason, inserted, deleted = _reach(cur, dt, sql, probe, reason)
    elif mode == "incremental":
        inserted, deleted = _incremental(cur, dt, sql, {"lo": dt.watermark, "hi": probe.high})
    data_ts = data_timestamp or probe.now
    catalog.update(
        cur,
        name,
        last_refresh_at=datetime.now(UTC),
        data_timestamp=data_ts,
        watermark=probe.high,
        lag_s=(datetime.now(UTC) - data_ts).total_seconds(),
        state="active",
        error=None,
        failures=0,
        next_attempt_at=None,
    )
    if probe.change:
        # log rows are trimmable only once this refresh has seen some: with none since the
        # watermark, the last refresh that saw them already trimmed what every table has seen
        trim_changes(cur, [s for s in dt.sources if s in TRACKED or s in catalog.names(cur)])
    return RefreshResult(name, mode, reason, inserted, deleted, started, data_ts)


def refresh(
    cur: duckdb.DuckDBPyConnection,
    name: str,
    *,
    full: bool = False,
    data_timestamp: datetime | None = None,
) -> RefreshResult:
    """Refresh `name` once, in one transaction; a failure is recorded and raised.

    `data_timestamp` is the time the refreshed data stands for (the scheduler gives every table
    of a run the run's start); by default the transaction's start.
    """
    started = datetime.now(UTC)
    try:
        with transaction(cur):
            result = _apply(cur, name, full, started, data_timestamp)
            history.record(cur, result)
        return result
    except UserError:
        raise
    except (duckdb.Error, WankaError) as error:
        message = one_line(str(error))
        mode = "full" if full else "incremental"
        failure = history.record_failure(cur, name, started, mode, message, data_timestamp)
        raise RefreshFailed(f"refresh of dynamic table {name} failed: {message}", failure) from None


def pending(cur: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether a refresh of `name` now would find its sources changed since its watermark: new
    batches, a logged update, delete or reload, rows its source dynamic tables' refreshes wrote,
    or jobs and nodes the whole-node attribution has not followed yet. Reads only (the probe a
    refresh starts with): what `wanka refresh` without a name asks of every dynamic table."""
    dt = catalog.load(cur, name)
    if "gpu_attribution" in dt.sources and attribution.out_of_sync(cur):
        return True
    probe = _probe(cur, dt, dml.compile(cur, dt.name, dt.plan))
    return probe.high != dt.watermark or bool(probe.change or probe.reload)


def catch_up(cur: duckdb.DuckDBPyConnection, names: Iterable[str]) -> None:
    """Refresh those of `names` that are dynamic tables, in the order given (incrementally: a
    few milliseconds each when current): what a report reading them does first."""
    present = catalog.names(cur)
    for name in names:
        if name in present:
            refresh(cur, name)
