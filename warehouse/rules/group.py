"""A rule group evaluated as Prometheus 2.42's `rules/manager.go` evaluates one: its rules in
order at one timestamp, each rule's output stored before the next rule runs (so a recording
rule's series is visible to the rules after it), a staleness marker for every series a rule
returned last time and not this time, and a failing rule marked `err` while the others go on.

Writes are kept back while no later rule of the group reads what they hold (by the metric names
of the later rules' selectors), and stored together: the same visibility for a tenth of the
appends in a group of independent rules. For the same reason, the queries of the rules that read
nothing an earlier rule of the group writes may run at once, on `store.workers` cursors
(planning a translated PromQL query is most of its time, and it is single-threaded); their
results are then taken in the rules' order, so what is stored and alerted is the same.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from warehouse.rules import expressions
from warehouse.rules.alerts import Alert, AlertingRule, EvalError
from warehouse.rules.rulefile import Group, Rule
from warehouse.rules.store import Labels, Point, QueryError, Store, labels_of

DEFAULT_INTERVAL_MS = 60_000


@dataclass
class RuleStatus:
    """What `/api/v1/rules` says of a rule: its health, last error and last evaluation."""

    health: str = "unknown"  # ok | err | unknown (Prometheus's HealthGood/Bad/Unknown)
    last_error: str = ""
    last_evaluation_ms: int | None = None
    evaluation_s: float = 0.0


@dataclass
class _Pending:
    points: list[tuple[Labels, int, float]] = field(default_factory=list)
    stale: list[tuple[Labels, int]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)


def _output_names(rule: Rule) -> set[str]:
    return {rule.name} if rule.kind == "record" else {"ALERTS", "ALERTS_FOR_STATE"}


def recorded_labels(rule: Rule, point: Point) -> dict[str, str]:
    """The labels a recording rule writes a point under: its own, the rule's name as
    `__name__`, and the rule's labels (an empty value removes the label)."""
    labels = dict(point.labels)
    labels["__name__"] = rule.name
    for name, value in rule.labels:
        if value:
            labels[name] = value
        else:
            labels.pop(name, None)
    return labels


def _reads(rule: Rule) -> set[str] | None:
    """The metric names a rule reads; None when it may read any (a selector without a name,
    or a template calling `query`)."""
    if rule.kind == "alert" and any("query" in t for _, t in rule.labels + rule.annotations):
        return None
    try:
        return expressions.metric_names(rule.expr)
    except expressions.BadExpression:
        return None


class GroupRunner:
    """One group's rules and their state across evaluations."""

    def __init__(
        self,
        group: Group,
        default_interval_ms: int = DEFAULT_INTERVAL_MS,
        external_labels: dict[str, str] | None = None,
        external_url: str = "",
    ) -> None:
        self.group = group
        self.interval_ms = group.interval(default_interval_ms)
        self.external_labels = dict(external_labels or {})
        self.alerting: dict[int, AlertingRule] = {
            i: AlertingRule(r, self.external_labels, external_url)
            for i, r in enumerate(group.rules)
            if r.kind == "alert"
        }
        self.status = [RuleStatus() for _ in group.rules]
        self.previous: list[set[Labels]] = [set() for _ in group.rules]
        self.reads = [_reads(r) for r in group.rules]
        # whose query reads nothing written by a rule before it in the group
        written: set[str] = set()
        self.early: list[bool] = []
        for rule, reads in zip(group.rules, self.reads, strict=True):
            self.early.append(reads is not None and not reads & written)
            written |= _output_names(rule)
        self.last_evaluation_ms: int | None = None
        self.evaluation_s = 0.0

    @property
    def key(self) -> tuple[str, str]:
        return self.group.file, self.group.name

    def evaluate(self, store: Store, ts_ms: int) -> list[tuple[AlertingRule, list[Alert]]]:
        """Evaluate every rule at `ts_ms`, storing what they produce; the alerts due to
        Alertmanager, by rule."""
        early = [i for i, ok in enumerate(self.early) if ok] if store.workers > 1 else []
        if len(early) < 2:
            return self._evaluate(store, ts_ms, {})
        local = threading.local()
        children: list[Store] = []

        def query(expression: str) -> list[Point]:
            if not hasattr(local, "store"):
                local.store = store.child()
                children.append(local.store)
            result: list[Point] = local.store.query(expression, ts_ms)
            return result

        with ThreadPoolExecutor(store.workers, thread_name_prefix="wanka-rule-query") as pool:
            futures = {i: pool.submit(query, self.group.rules[i].expr) for i in early}
            try:
                return self._evaluate(store, ts_ms, futures)
            finally:
                for future in futures.values():
                    future.cancel()
                pool.shutdown(wait=True)
                for child in children:
                    child.cursor.close()

    def _evaluate(
        self, store: Store, ts_ms: int, prefetched: dict[int, Future[list[Point]]]
    ) -> list[tuple[AlertingRule, list[Alert]]]:
        started = time.perf_counter()
        pending = _Pending()
        to_send: list[tuple[AlertingRule, list[Alert]]] = []
        for index, rule in enumerate(self.group.rules):
            reads = self.reads[index]
            if pending.names and (reads is None or reads & pending.names):
                self._flush(store, pending)
            status = self.status[index]
            rule_started = time.perf_counter()
            try:
                future = prefetched.get(index)
                points = future.result() if future else store.query(rule.expr, ts_ms)
                if rule.kind == "record":
                    samples = self._record(rule, points)
                else:
                    samples = self._alert(index, points, store, ts_ms)
            except (QueryError, EvalError) as error:
                status.health, status.last_error = "err", str(error)
            else:
                status.health, status.last_error = "ok", ""
                if rule.kind == "alert":
                    alerting = self.alerting[index]
                    due = alerting.to_send(ts_ms, self.interval_ms)
                    if due:
                        to_send.append((alerting, due))
                returned = {labels for labels, _ in samples}
                pending.points.extend((labels, ts_ms, value) for labels, value in samples)
                pending.stale.extend((s, ts_ms) for s in self.previous[index] - returned)
                pending.names |= _output_names(rule)
                self.previous[index] = returned
            status.last_evaluation_ms = ts_ms
            status.evaluation_s = time.perf_counter() - rule_started
        self._flush(store, pending)
        self.last_evaluation_ms = ts_ms
        self.evaluation_s = time.perf_counter() - started
        return to_send

    @staticmethod
    def _flush(store: Store, pending: _Pending) -> None:
        if pending.points or pending.stale:
            store.write(pending.points, pending.stale)
        pending.points, pending.stale, pending.names = [], [], set()

    def _record(self, rule: Rule, points: list[Point]) -> list[tuple[Labels, float]]:
        found: dict[Labels, float] = {}
        for point in points:
            series = labels_of(recorded_labels(rule, point))
            if series in found:
                raise EvalError(
                    "vector contains metrics with the same labelset after applying rule labels"
                )
            found[series] = point.value
        if self.group.limit > 0 and len(found) > self.group.limit:
            raise EvalError(f"exceeded limit {self.group.limit} with {len(found)} series")
        return list(found.items())

    def _alert(
        self, index: int, points: list[Point], store: Store, ts_ms: int
    ) -> list[tuple[Labels, float]]:
        alerting = self.alerting[index]
        return alerting.evaluate(points, ts_ms, store.query, self.group.limit)
