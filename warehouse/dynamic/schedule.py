"""The scheduler: which dynamic tables are due, and refreshing them once (`wanka refresh`).

Freshness-driven, like Snowflake's target lag: a table is due when a refresh started at the
next pass would finish after its data got staler than its freshness — `now + time to the next
pass + expected duration >= data_timestamp + freshness`, the expected duration being its last
successful refresh's (`wanka serve` passes every --refresh-interval-s; a table refreshed only at
its deadline would show data up to a pass's interval staler than its freshness). A table
never refreshed, or whose last refresh failed (or whose upstream failed), is due. The dynamic
tables a due table reads are refreshed with it, before it, whatever their own freshness (a
'downstream' table is refreshed only then), so that a chain reflects one data timestamp: the
run's start, recorded in dynamic_tables.data_timestamp and refresh_history.data_timestamp.

A failed refresh counts in `failures` and is not retried before `next_attempt_at` = failure
time + min(30 s × 2^(failures − 1), 1 h); a success resets both. Every table that reads a failed
one, directly or not, gets state 'upstream_failed' and is skipped until the upstream refreshes
again. `run_due` is a function of the catalog and the clock it is given; `wanka serve` runs it
in a loop.

A manual refresh brings data up to date now, whatever the freshness, as Snowflake's manual
refresh does: `wanka refresh NAME` (and the HTTP endpoint) refreshes the dynamic tables NAME
reads, directly or not, in dependency order, then NAME — ignoring their backoff, and skipping
NAME when one of them fails; `wanka refresh` with no name (`changed=True`) refreshes the due
tables and every table whose sources changed since its last refresh (`refresh.pending`, asked
in dependency order, so a table sees what the refreshes before it in the run wrote).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb

from warehouse.dynamic import catalog
from warehouse.dynamic.history import RefreshResult, backoff
from warehouse.dynamic.refresh import RefreshFailed, pending, refresh
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine
from warehouse.kernel.transactions import Turn, no_turn

__all__ = [
    "Failed",
    "Outcome",
    "Skipped",
    "backoff",
    "describe",
    "run_due",
    "seconds",
    "upstream",
]


@dataclass(frozen=True)
class Failed:
    """A refresh this run attempted that failed (already recorded by the refresh)."""

    name: str
    error: str
    started_at: datetime
    failures: int
    next_attempt_at: datetime


@dataclass(frozen=True)
class Skipped:
    """A due table this run did not refresh, and why."""

    name: str
    reason: str


Outcome = RefreshResult | Failed | Skipped


@dataclass(frozen=True)
class Entry:
    """What the scheduler knows of one dynamic table."""

    name: str
    freshness_s: float | None  # None: 'downstream'
    data_timestamp: datetime | None
    state: str | None
    failures: int
    next_attempt_at: datetime | None
    sources: tuple[str, ...]  # the dynamic tables it reads
    expected_s: float  # the last successful refresh's duration, 0 when none


def entries(con: duckdb.DuckDBPyConnection) -> dict[str, Entry]:
    """Every dynamic table, by name."""
    rows = con.execute(
        "SELECT d.name, CASE WHEN d.freshness = 'downstream' THEN NULL "
        "ELSE epoch(TRY_CAST(d.freshness AS INTERVAL)) END, d.data_timestamp, d.state, "
        "coalesce(d.failures, 0), d.next_attempt_at, d.sources, "
        "(SELECT epoch(h.finished_at - h.started_at) FROM wanka.refresh_history h "
        " WHERE h.name = d.name AND h.state = 'succeeded' ORDER BY h.started_at DESC LIMIT 1) "
        "FROM wanka.dynamic_tables d ORDER BY d.name"
    ).fetchall()
    known = {r[0] for r in rows}
    return {
        r[0]: Entry(
            r[0],
            r[1],
            r[2],
            r[3],
            int(r[4]),
            r[5],
            tuple(s for s in (r[6] or []) if s in known and s != r[0]),
            float(r[7] or 0.0),
        )
        for r in rows
    }


def _order(tables: dict[str, Entry]) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in tables:
            return
        for source in tables[name].sources:  # no cycles: a table reads only older ones
            visit(source)
        order.append(name)

    for name in tables:
        visit(name)
    return order


def upstream(sources: dict[str, tuple[str, ...]], name: str) -> list[str]:
    """The dynamic tables `name` reads, directly or not, in dependency order (not `name`).

    `sources` maps each dynamic table to the dynamic tables it reads.

    >>> upstream({"a": (), "b": ("a",), "c": ("b", "a"), "d": ()}, "c")
    ['a', 'b']
    """
    found: list[str] = []

    def visit(each: str) -> None:
        for source in sources.get(each, ()):
            if source not in found and source != name:
                visit(source)
                found.append(source)

    visit(name)
    return found


def upstream_of(con: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """`upstream` of `name` as the catalog holds it (an unknown `name` reads nothing)."""
    return upstream({n: e.sources for n, e in entries(con).items()}, name)


def is_due(entry: Entry, now: datetime, next_pass_s: float = 0.0) -> bool:
    """Due on its own account: stale by the next pass (`next_pass_s` after `now`) plus a
    refresh's duration and `slack_s` of its target, never refreshed, or failed (retries wait for
    the backoff elsewhere).
    'downstream' tables never are."""
    if entry.state in ("failed", "upstream_failed") or entry.data_timestamp is None:
        return True
    if entry.freshness_s is None:
        return False
    deadline = entry.data_timestamp + timedelta(seconds=entry.freshness_s)
    ahead = entry.expected_s + next_pass_s + slack_s(entry.freshness_s)
    return now + timedelta(seconds=ahead) >= deadline


#: The share of its target a table is refreshed ahead of time by, beyond its last refresh's
#: duration and the next pass, and never less than `MIN_SLACK_S`: neither the wait for the write
#: gate nor a pass that starts late is known beforehand. Without it, bench_soak's hour at 10,000
#: GPUs (remote_write holding the gate half of the time) had the 5-minute tables 301 s behind at
#: worst; with 1 % alone (0.6 s of a minute), its 1-minute tables reached 61 s.
SLACK = 0.01
MIN_SLACK_S = 3.0


def slack_s(freshness_s: float) -> float:
    """How far ahead of its deadline, beyond the expected times, a table is refreshed.

    >>> slack_s(60), slack_s(300), slack_s(3600)
    (3.0, 3.0, 36.0)
    """
    return max(SLACK * freshness_s, MIN_SLACK_S)


def due(
    con: duckdb.DuckDBPyConnection, now: datetime | None = None, next_pass_s: float = 0.0
) -> list[str]:
    """Tables a run at `now` handles, in dependency order: the due ones and what they read."""
    return _due(entries(con), now or datetime.now(UTC), next_pass_s)


def _due(tables: dict[str, Entry], now: datetime, next_pass_s: float = 0.0) -> list[str]:
    """The due tables and what they read, in dependency order. A table whose refresh would
    end late because the run's other refreshes go first is due too: due is judged again with
    the expected time of the whole run added."""
    wanted = _with_sources(tables, {n for n, e in tables.items() if is_due(e, now, next_pass_s)})
    run_s = sum(tables[name].expected_s for name in wanted)
    if run_s:
        later = {n for n, e in tables.items() if is_due(e, now, next_pass_s + run_s)}
        wanted = _with_sources(tables, wanted | later)
    return [name for name in _order(tables) if name in wanted]


def _with_sources(tables: dict[str, Entry], wanted: set[str]) -> set[str]:
    """`wanted` and the dynamic tables they read: what a due table reads is refreshed with it,
    at the same data timestamp."""
    wanted, stack = set(wanted), list(wanted)
    while stack:
        for source in tables[stack.pop()].sources:
            if source not in wanted:
                wanted.add(source)
                stack.append(source)
    return wanted


def run_due(
    target: Engine | duckdb.DuckDBPyConnection,
    now: datetime | None = None,
    *,
    name: str | None = None,
    full: bool = False,
    next_pass_s: float = 0.0,
    changed: bool = False,
    turn: Turn = no_turn,
) -> list[Outcome]:
    """Refresh every table due at `now` once; a loop that runs again in `next_pass_s` seconds
    refreshes what would be late by then. With `changed`, also every table whose sources
    changed since its last refresh. With `name`, only `name` and the dynamic tables it reads,
    those first, ignoring their backoff (`full` then applies to `name` alone). Each refresh
    runs in a `turn` of its own.

    Failures are recorded and returned, never raised; an unknown `name` is a UserError.
    """
    if isinstance(target, Engine):
        cur = target.cursor()
        try:
            return run_due(
                cur, now, name=name, full=full, next_pass_s=next_pass_s, changed=changed, turn=turn
            )
        finally:
            cur.close()
    con = target
    run_at = now or datetime.now(UTC)
    tables = entries(con)
    if name is not None:
        name = catalog.check_name(name)
        if name not in tables:
            raise UserError(f"no dynamic table named {name}")
        todo = [*upstream({n: e.sources for n, e in tables.items()}, name), name]
        wanted = set(todo)
    else:
        wanted = set(_due(tables, run_at, next_pass_s))
        todo = _order(tables) if changed else [n for n in _order(tables) if n in wanted]
    bad: dict[str, str] = {}  # tables this run failed or skipped: why
    done: list[Outcome] = []
    for each in todo:
        if each not in wanted and not pending(con, each):
            continue  # asked only when `changed`: after the refreshes before it in the run
        entry = tables[each]
        failed_source = next((s for s in entry.sources if s in bad), None)
        if failed_source is not None:
            _mark_upstream_failed(con, [each], failed_source)
            bad[each] = f"upstream {failed_source} failed"
            done.append(Skipped(each, bad[each]))
            continue
        waiting = entry.next_attempt_at
        if name is None and entry.state == "failed" and waiting is not None and waiting > run_at:
            bad[each] = (
                f"failed {entry.failures} times in a row; next attempt at {waiting.isoformat()}"
            )
            done.append(Skipped(each, bad[each]))
            continue
        with turn():
            outcome = _refresh_one(con, entry, run_at, full and (name is None or each == name))
        if isinstance(outcome, Failed):
            bad[each] = outcome.error  # its readers are marked upstream_failed by the record
        done.append(outcome)
    return done


def _refresh_one(
    con: duckdb.DuckDBPyConnection, entry: Entry, run_at: datetime, full: bool
) -> RefreshResult | Failed:
    """One refresh at the run's data timestamp; a failure comes back recorded (history)."""
    started = datetime.now(UTC)
    try:
        return refresh(con, entry.name, full=full, data_timestamp=run_at)
    except RefreshFailed as error:
        failure = error.failure
        return Failed(entry.name, str(error), started, failure.failures, failure.next_attempt_at)


def _mark_upstream_failed(con: duckdb.DuckDBPyConnection, names: list[str], upstream: str) -> None:
    for each in names:
        catalog.update(
            con, each, state="upstream_failed", error=f"upstream dynamic table {upstream} failed"
        )


def seconds(con: duckdb.DuckDBPyConnection, outcome: Outcome) -> float | None:
    """How long a refresh took, as refresh_history recorded it."""
    if isinstance(outcome, Skipped):
        return None
    rows = con.execute(
        "SELECT epoch(finished_at - started_at) FROM wanka.refresh_history "
        "WHERE name = ? AND started_at = ?",
        [outcome.name, outcome.started_at],
    ).fetchall()
    return float(rows[0][0]) if rows and rows[0][0] is not None else None


def describe(outcome: Outcome, took: float | None) -> str:
    """One line for `wanka refresh`."""
    time = f"{took:.3f} s" if took is not None else "-"
    if isinstance(outcome, RefreshResult):
        line = (
            f"{outcome.name}: {outcome.refresh_mode}, {outcome.rows_inserted} rows inserted, "
            f"{outcome.rows_deleted} deleted, {time}"
        )
        return f"{line} ({outcome.reason})" if outcome.reason else line
    if isinstance(outcome, Failed):
        retry = outcome.next_attempt_at.isoformat()
        return f"{outcome.name}: FAILED after {time}: {outcome.error} (retry after {retry})"
    return f"{outcome.name}: skipped: {outcome.reason}"
