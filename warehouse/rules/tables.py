"""`wanka.rules` and `wanka.alerts` (sql/schema/0022_rules.sql): the groups' state written
where SQL reads it, a group's rows replaced after each of its evaluations."""

from __future__ import annotations

import json
from collections.abc import Iterable

import duckdb

from warehouse.kernel.transactions import transaction
from warehouse.rules.group import GroupRunner


def _ts(ms: int | None) -> str | None:
    """A time for DuckDB's TIMESTAMPTZ from ms (None for none)."""
    if not ms:
        return None
    return f"{ms / 1000:.3f}"


def save_group(cur: duckdb.DuckDBPyConnection, runner: GroupRunner) -> None:
    """Replace the rows of `runner`'s group by its state now, in one transaction."""
    with transaction(cur):
        _save(cur, runner)


def _save(cur: duckdb.DuckDBPyConnection, runner: GroupRunner) -> None:
    group = runner.group
    key = [group.file, group.name]
    cur.execute("DELETE FROM wanka.rules WHERE group_file = ? AND group_name = ?", key)
    cur.execute("DELETE FROM wanka.alerts WHERE group_file = ? AND group_name = ?", key)
    rules, alerts = [], []
    for index, rule in enumerate(group.rules):
        status = runner.status[index]
        alerting = runner.alerting.get(index)
        rules.append(
            [*key, index + 1, rule.name, "alerting" if alerting else "recording", rule.expr,
             runner.interval_ms / 1000, rule.for_ms / 1000 if alerting else None,
             rule.keep_firing_for_ms / 1000 if alerting else None,
             json.dumps(dict(rule.labels)),
             json.dumps(dict(rule.annotations)) if alerting else None,
             alerting.state() if alerting else None, status.health, status.last_error or None,
             _ts(status.last_evaluation_ms), status.evaluation_s]
        )  # fmt: skip
        for alert in alerting.active.values() if alerting else ():
            alerts.append(
                [*key, rule.name, json.dumps(dict(alert.labels)),
                 json.dumps(dict(alert.annotations)),
                 alert.state, _ts(alert.active_at_ms), _ts(alert.fired_at_ms),
                 _ts(alert.resolved_at_ms), alert.value]
            )  # fmt: skip
    if rules:
        cur.executemany(
            "INSERT INTO wanka.rules VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "to_timestamp(?::DOUBLE), ?)",
            rules,
        )
    if alerts:
        cur.executemany(
            "INSERT INTO wanka.alerts VALUES (?, ?, ?, ?, ?, ?, to_timestamp(?::DOUBLE), "
            "to_timestamp(?::DOUBLE), to_timestamp(?::DOUBLE), ?)",
            alerts,
        )


def keep_only(cur: duckdb.DuckDBPyConnection, runners: Iterable[GroupRunner]) -> None:
    """Drop the rows of groups no longer loaded, and write those just loaded."""
    held = list(runners)
    keys = {(r.group.file, r.group.name) for r in held}
    with transaction(cur):
        _drop_others(cur, keys)
        for runner in held:
            _save(cur, runner)


def _drop_others(cur: duckdb.DuckDBPyConnection, keys: set[tuple[str, str]]) -> None:
    for table in ("wanka.rules", "wanka.alerts"):
        found = cur.execute(f"SELECT DISTINCT group_file, group_name FROM {table}").fetchall()
        for file, name in found:
            if (file, name) not in keys:
                cur.execute(
                    f"DELETE FROM {table} WHERE group_file = ? AND group_name = ?", [file, name]
                )
