"""The rule groups a server evaluates: loaded from their files all or nothing, evaluated at
aligned times (multiples of the group's interval, minus the query offset), their alert state
kept across a reload for a group that did not change, and restored after a restart from
`ALERTS_FOR_STATE` as Prometheus restores it (outage tolerance 1 h, grace period 10 min).
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

from warehouse.notifier.payload import Outgoing
from warehouse.remote_write.labels import labels_json
from warehouse.rules import rulefile
from warehouse.rules.alerts import Alert, AlertingRule
from warehouse.rules.group import GroupRunner
from warehouse.rules.store import Store

OUTAGE_TOLERANCE_MS = 3_600_000
FOR_GRACE_PERIOD_MS = 600_000


@dataclass(frozen=True)
class RuleConfig:
    """What the configuration says of rules (`rule_files`, `global.evaluation_interval`,
    `global.rule_query_offset`, `global.external_labels`)."""

    files: tuple[str, ...] = ()
    interval_ms: int = 60_000
    offset_ms: int = 0
    query_timeout_s: float | None = None
    external_labels: tuple[tuple[str, str], ...] = ()
    external_url: str = ""


def load_groups(files: tuple[str, ...]) -> list[rulefile.Group]:
    """Every group of every file (globs as Prometheus expands them); RuleFileError for the
    first file that is wrong, nothing loaded."""
    groups: list[rulefile.Group] = []
    for pattern in files:
        matched = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for file in matched:
            groups += rulefile.load(Path(file))
    return groups


class RuleManager:
    """The groups and their state; no thread of its own (the serve process's part runs it)."""

    def __init__(self) -> None:
        self.config = RuleConfig()
        self.runners: dict[tuple[str, str], GroupRunner] = {}
        self.to_restore: set[tuple[str, str]] = set()
        self.next_ms: dict[tuple[str, str], int] = {}

    def apply(self, config: RuleConfig, groups: list[rulefile.Group]) -> None:
        """Use `groups` from now on; a group unchanged keeps its alerts and schedule."""
        runners: dict[tuple[str, str], GroupRunner] = {}
        for group in groups:
            held = self.runners.get((group.file, group.name))
            if held is not None and held.group == group and config == self.config:
                runners[held.key] = held
                continue
            runner = GroupRunner(
                group, config.interval_ms, dict(config.external_labels), config.external_url
            )
            if held is not None:  # changed: its alerts carry over where the rule did not
                for alerting in runner.alerting.values():
                    old = next((a for a in held.alerting.values() if a.rule == alerting.rule), None)
                    if old is not None:
                        alerting.active, alerting.restored = old.active, old.restored
            else:
                self.to_restore.add(runner.key)
            runners[runner.key] = runner
        self.config = config
        self.runners = runners
        self.next_ms = {k: v for k, v in self.next_ms.items() if k in runners}

    def due(self, now_ms: int) -> list[tuple[GroupRunner, int]]:
        """The groups due at wall time `now_ms`, each with the time it evaluates at (its
        scheduled time minus the query offset)."""
        found = []
        for key, runner in self.runners.items():
            interval = runner.interval_ms
            scheduled = now_ms - now_ms % interval
            if self.next_ms.get(key, 0) <= scheduled:
                self.next_ms[key] = scheduled + interval
                found.append((runner, scheduled - self.config.offset_ms))
        return found

    def evaluate(self, runner: GroupRunner, store: Store, ts_ms: int) -> list[Outgoing]:
        """Evaluate one group at `ts_ms` (restoring its alerts' `for` state after its first
        evaluation since start); the alerts due to Alertmanager."""
        restore = runner.key in self.to_restore
        if restore:
            for alerting in runner.alerting.values():
                alerting.restored = False
        due = runner.evaluate(store, ts_ms)
        if restore:
            self.to_restore.discard(runner.key)
            for alerting in runner.alerting.values():
                restore_for_state(alerting, store, ts_ms)
        return [outgoing(alert, alerting.rule.expr) for alerting, alerts in due for alert in alerts]


def outgoing(alert: Alert, expression: str) -> Outgoing:
    return Outgoing(
        dict(alert.labels), dict(alert.annotations), alert.fired_at_ms, alert.resolved_at_ms,
        alert.valid_until_ms, expression,
    )  # fmt: skip


def restore_for_state(alerting: AlertingRule, store: Store, ts_ms: int) -> None:
    """Prometheus's RestoreForState: an active alert of a rule with `for` of at least the
    grace period takes its activation time back from the last ALERTS_FOR_STATE sample of the
    last hour, moved on by the time the server was down (or to leave it the grace period)."""
    hold = alerting.rule.for_ms
    if hold < FOR_GRACE_PERIOD_MS:
        alerting.restored = True
        return
    for alert in alerting.active.values():
        labels = {k: v for k, v in alert.labels}
        found = store.cursor.execute(
            "SELECT epoch_ms(ts), value FROM prom_samples WHERE metric = 'ALERTS_FOR_STATE' "
            "AND labels = ? AND ts BETWEEN make_timestamp(? * 1000) AND make_timestamp(? * 1000) "
            "ORDER BY ts DESC LIMIT 1",
            [labels_json(labels), ts_ms - OUTAGE_TOLERANCE_MS, ts_ms],
        ).fetchall()
        if not found:
            continue
        down_ms, active_s = int(found[0][0]), float(found[0][1])
        restored_ms = int(active_s) * 1000
        remaining = hold - (down_ms - restored_ms)
        if remaining <= 0:
            pass
        elif remaining < FOR_GRACE_PERIOD_MS:
            restored_ms = ts_ms + FOR_GRACE_PERIOD_MS - hold
        else:
            restored_ms += ts_ms - down_ms
        alert.active_at_ms = restored_ms
    alerting.restored = True
