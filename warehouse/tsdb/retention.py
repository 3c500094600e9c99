"""Retention: raw telemetry older than a rule is dropped; what dynamic tables derived stays.

`ALTER TABLE gpu_metrics SET (retention = '14 days')` (admin; `RESET (retention)` or
`retention = NONE` removes it) or `wanka retention gpu_metrics '14 days'` keeps the rule in
wanka.retention. `apply` — on the scheduler, on `wanka retention --apply` — deletes the samples
older than now() − keep (compressed blocks whole, once their newest sample is), one transaction
per day of dropped range, each marked in wanka.retention_running so the change triggers do not
log it (sql/schema/0012): no incremental refresh recomputes the groups of dropped rows. Whether
a dynamic table keeps what it derived (a FULL refresh recomputes only the buckets the table
still holds whole; a rule it could not keep its rows under is refused) is
`warehouse.dynamic.retention`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np
import sqlglot
from sqlglot import exp

from warehouse.errors import UserError
from warehouse.kernel.transactions import Turn, no_turn, transaction
from warehouse.tsdb import relations, tiers

#: Tables a rule may be set on: their time column and the table whose rows are deleted.
TIME_TABLES = {"gpu_metrics": ("ts", relations.HOT)}
STEP = timedelta(days=1)
#: The most samples one step drops. A DELETE on the samples hands its statement triggers the
#: deleted rows as an OLD TABLE, which DuckDB holds in memory (~110 B a row, 0.29 s a million,
#: measured with a trigger that logs nothing): a day of 10,000 GPUs at 60 s (229M samples) ran
#: out of 18.8 GB in one step. Steps are cut shorter where the batches say they hold more.
MAX_ROWS = 4_000_000
#: The least time a pass drops once a table has been cut: less waits for a later pass.
GRAIN = timedelta(minutes=5)


@dataclass(frozen=True)
class Rule:
    table: str
    keep: timedelta
    held_from: datetime | None


@dataclass(frozen=True)
class Applied:
    """What one pass of `apply` did for one table."""

    table: str
    cutoff: datetime
    rows: int
    steps: int


def rules(cur: duckdb.DuckDBPyConnection) -> list[Rule]:
    found = cur.execute(
        "SELECT table_name, keep, held_from FROM wanka.retention ORDER BY table_name"
    ).fetchall()
    return [Rule(t, as_timedelta(k), h) for t, k, h in found]


def held_from(cur: duckdb.DuckDBPyConnection, table: str) -> datetime | None:
    """The time before which `table`'s rows were dropped by its rule, or None."""
    found = cur.execute(
        "SELECT held_from FROM wanka.retention WHERE table_name = ?", [table]
    ).fetchall()
    return found[0][0] if found else None


def parse_statement(text: str) -> tuple[str, str | None] | None:
    """(table, keep or None to remove) when `text` is ALTER TABLE t SET (retention = ...) or
    ALTER TABLE t RESET (retention); None for any other statement.

    >>> parse_statement("ALTER TABLE gpu_metrics SET (retention = '14 days')")
    ('gpu_metrics', '14 days')
    >>> parse_statement("alter table gpu_metrics reset (retention)")
    ('gpu_metrics', None)
    >>> parse_statement("ALTER TABLE t ADD COLUMN x INT") is None
    True
    """
    words = text.split()
    if len(words) >= 4 and [w.upper() for w in words[:2]] == ["ALTER", "TABLE"]:
        rest = " ".join(words[3:]).replace(" ", "").lower()
        if rest == "reset(retention)":
            return words[2].strip('"'), None
    if "retention" not in text.lower():
        return None
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return None
    if not isinstance(tree, exp.Alter) or len(tree.args.get("actions") or []) != 1:
        return None
    action = tree.args["actions"][0]
    if not isinstance(action, exp.AlterSet) or len(action.expressions) != 1:
        return None
    setting = action.expressions[0]
    if not isinstance(setting, exp.EQ) or setting.this.name.lower() != "retention":
        return None
    value = setting.expression
    if isinstance(value, exp.Column) and value.name.upper() == "NONE":
        return tree.this.name, None
    if not isinstance(value, exp.Literal) or not value.is_string:
        raise UserError("retention takes an interval in quotes, e.g. retention = '14 days'")
    return tree.this.name, value.this


def set_rule(
    cur: duckdb.DuckDBPyConnection, table: str, keep: str | None, user: str | None = None
) -> str:
    """Set (or with None remove) `table`'s rule; what was done, in words. Nothing is deleted
    until `apply` runs. The rule alone: `warehouse.dynamic.retention.set_rule`, what every
    face calls, first refuses one a dynamic table reading `table` could not keep its rows
    under."""
    table = time_table(cur, table)
    if keep is None:
        return remove_rule(cur, table)
    return store_rule(cur, table, keep, keep_interval(cur, keep), user)


def remove_rule(cur: duckdb.DuckDBPyConnection, table: str) -> str:
    """Remove the rule of `table` (a `time_table` name); what was done, in words."""
    cur.execute("DELETE FROM wanka.retention WHERE table_name = ?", [table])
    return f"{table}: no retention (rows are kept)"


def store_rule(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    keep: str,
    interval: timedelta,
    user: str | None = None,
) -> str:
    """Keep `interval` (`keep` as given) of `table` (a `time_table` name); what was done."""
    held = held_from(cur, table)  # what an earlier rule dropped stays dropped
    cur.execute("DELETE FROM wanka.retention WHERE table_name = ?", [table])
    cur.execute(
        "INSERT INTO wanka.retention (table_name, keep, held_from, set_at, set_by) "
        "VALUES (?, ?, ?, now(), ?)",
        [table, interval, held, user],
    )
    return f"{table}: rows older than {keep} are dropped by the scheduler"


def apply(
    cur: duckdb.DuckDBPyConnection,
    now: datetime | None = None,
    *,
    step: timedelta = STEP,
    max_rows: int = MAX_ROWS,
    turn: Turn = no_turn,
) -> list[Applied]:
    """Drop what every rule says is too old; one transaction per `step` of dropped time, or per
    `max_rows` samples where a step would hold more, each in a `turn` of its own. The
    downsampling tiers fold every sample first: what retention drops, they already hold."""
    now = now or datetime.now(UTC)
    done = []
    ruled = rules(cur)
    if any(rule.table == relations.VIEW for rule in ruled):
        with turn():
            tiers.fold(cur)
    for rule in ruled:
        column, stored = TIME_TABLES[rule.table]
        cutoff = now - rule.keep
        if rule.held_from is not None and cutoff < rule.held_from + GRAIN:
            continue  # the scheduler passes every few seconds: drop in GRAIN steps at least
        oldest = cur.execute(
            f"SELECT min(ts_min) FROM {relations.BATCHES}"  # one row per insert, not a scan
            if stored == relations.HOT
            else f"SELECT min({column}) FROM {stored}"
        ).fetchall()[0][0]
        edge = max(oldest, rule.held_from or oldest) if oldest is not None else cutoff
        batches = _batches(cur, cutoff)
        rows = steps = 0
        while True:
            last, edge = edge, _next_edge(batches, edge, min(cutoff, edge + step), max_rows)
            with turn(), transaction(cur):
                if stored == relations.HOT:  # what only the samples held goes into the tier
                    tiers.keep_single_minutes(cur, last, edge)
                cur.execute("INSERT INTO wanka.retention_running VALUES (?)", [rule.table])
                found = cur.execute(f"DELETE FROM {stored} WHERE {column} < ?", [edge])
                rows += int(found.fetchall()[0][0])
                if stored == relations.HOT:
                    rows += _drop_blocks(cur, edge)
                    cur.execute(f"DELETE FROM {relations.BATCHES} WHERE ts_max < ?", [edge])
                cur.execute(
                    "DELETE FROM wanka.retention_running WHERE table_name = ?", [rule.table]
                )
                cur.execute(
                    "UPDATE wanka.retention SET held_from = ? WHERE table_name = ?",
                    [edge, rule.table],
                )
            steps += 1
            if edge >= cutoff:
                break
        done.append(Applied(rule.table, cutoff, rows, steps))
    return done


def _drop_blocks(cur: duckdb.DuckDBPyConnection, edge: datetime) -> int:
    """Drop the compressed blocks wholly older than `edge` (a block is kept, or dropped,
    whole: one that straddles the edge goes on a later pass); the samples they held."""
    dropped = cur.execute(
        f"DELETE FROM {relations.BLOCKS} WHERE ts_max < ? RETURNING samples", [edge]
    ).fetchall()
    return sum(int(n) for (n,) in dropped)


@dataclass(frozen=True)
class Batches:
    """Samples by when they were taken: `rows` between `lo` and `hi` (epoch seconds) each."""

    rows: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def between(self, start: float, end: float) -> float:
        """About how many samples have start <= ts < end, each part spread evenly over its span.

        >>> Batches(np.array([100.0, 7.0]), np.array([0.0, 50.0]), np.array([100.0, 51.0])
        ...         ).between(25.0, 75.0)
        57.0
        """
        width = self.hi - self.lo
        overlap = np.clip(np.minimum(end, self.hi) - np.maximum(start, self.lo), 0.0, width)
        return float(np.sum(self.rows * overlap / width))

    def within(self, start: float, end: float) -> Batches:
        """The parts that overlap [start, end)."""
        keep = (self.lo < end) & (self.hi > start)
        return Batches(self.rows[keep], self.lo[keep], self.hi[keep])


def _batches(cur: duckdb.DuckDBPyConnection, cutoff: datetime) -> Batches:
    """The samples taken before `cutoff`, from `wanka.sample_batches` (one row per insert, not a
    scan), summed by the minutes each insert's first and last sample fall in."""
    found = cur.execute(
        "SELECT sum(rows)::DOUBLE, epoch(lo), epoch(hi) + 60 FROM ("
        "SELECT rows, time_bucket(INTERVAL 1 MINUTE, ts_min) AS lo, "
        f"time_bucket(INTERVAL 1 MINUTE, ts_max) AS hi FROM {relations.BATCHES} "
        "WHERE ts_min < ? AND rows > 0) GROUP BY lo, hi",
        [cutoff],
    ).fetchnumpy()
    return Batches(*(np.asarray(found[c], dtype=np.float64) for c in found))


def _next_edge(batches: Batches, edge: datetime, limit: datetime, max_rows: int) -> datetime:
    """The end of the next step from `edge`: `limit`, or sooner where more than `max_rows`
    samples lie before it (found to the second; one second at least, whatever it holds).

    >>> t0 = datetime(2026, 10, 1, tzinfo=UTC)
    >>> day = Batches(np.array([86_400_000.0]), np.array([t0.timestamp()]),
    ...               np.array([t0.timestamp() + 86_400]))  # 1,000 samples a second
    >>> _next_edge(day, t0, t0 + timedelta(days=1), 4_000_000) - t0
    datetime.timedelta(seconds=4000)
    >>> _next_edge(day.within(0, 1), t0, t0 + timedelta(days=1), 10) - t0
    datetime.timedelta(days=1)
    """
    start = edge.timestamp()
    low, high = 1, int((limit - edge).total_seconds())  # whole seconds past edge
    near = batches.within(start, start + high)
    if high <= low or near.between(start, start + high) <= max_rows:
        return limit
    while low < high:  # the most seconds whose rows fit, at least one
        mid = (low + high + 1) // 2
        if near.between(start, start + mid) <= max_rows:
            low = mid
        else:
            high = mid - 1
    return edge + timedelta(seconds=low)


def time_table(cur: duckdb.DuckDBPyConnection, table: str) -> str:
    """`table` as a rule names it; raises unless it is one a rule may be set on."""
    name = table.strip('"').lower().removeprefix("main.")
    if name in TIME_TABLES:
        return name
    columns = cur.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ? AND data_type LIKE 'TIMESTAMP%'",
        [name],
    ).fetchall()
    if columns:
        raise UserError(
            f"retention is supported on {', '.join(TIME_TABLES)} for now, not on {name}"
        )
    raise UserError(f"retention needs a time table: {name} has no timestamp column")


def keep_interval(cur: duckdb.DuckDBPyConnection, keep: str) -> timedelta:
    """What a rule keeps, as a time span; raises unless `keep` is a positive interval."""
    try:
        value = cur.execute("SELECT CAST(? AS INTERVAL)", [keep]).fetchall()[0][0]
    except duckdb.Error:
        raise UserError(f"retention {keep!r} is not an interval (e.g. '14 days')") from None
    found = as_timedelta(value)
    if found <= timedelta(0):
        raise UserError(f"retention {keep!r} must be longer than nothing")
    return found


def as_timedelta(value: object) -> timedelta:
    """DuckDB returns intervals as timedelta; months (which it cannot) as 30 days each."""
    if isinstance(value, timedelta):
        return value
    raise UserError(f"not an interval of days or less: {value!r}")
