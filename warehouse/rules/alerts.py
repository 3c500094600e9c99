"""An alerting rule's state machine, as Prometheus 2.42's `rules/alerting.go` runs it: each
series of the expression's result is an alert, pending from its first evaluation, firing once
it has been active for `for`, kept firing for `keep_firing_for` after it disappears, then
inactive (resolved) and kept 15 minutes so that Alertmanager hears of the resolution.

Labels and annotations are Go templates expanded at every evaluation; a template that fails
expands to `<error expanding template: ...>` and the alert still goes out, as in Prometheus.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from warehouse.rules import gotemplate
from warehouse.rules.rulefile import Rule
from warehouse.rules.store import Labels, Point, labels_of

PENDING, FIRING, INACTIVE = "pending", "firing", "inactive"
RESOLVED_RETENTION_MS = 15 * 60 * 1000
RESEND_DELAY_MS = 60 * 1000


class EvalError(Exception):
    """A rule's evaluation that failed: its text becomes the rule's `lastError`."""


@dataclass
class Alert:
    labels: Labels  # the alert's labels: alertname and the rule's labels included, no __name__
    annotations: Labels
    state: str
    active_at_ms: int
    value: float
    fired_at_ms: int = 0
    resolved_at_ms: int = 0
    keep_firing_since_ms: int = 0
    last_sent_ms: int | None = None  # None: never sent
    valid_until_ms: int = 0

    def needs_sending(self, ts_ms: int, resend_delay_ms: int) -> bool:
        if self.state == PENDING:
            return False
        if self.last_sent_ms is None or self.resolved_at_ms > self.last_sent_ms:
            return True
        return self.last_sent_ms + resend_delay_ms < ts_ms


Query = Callable[[str, int], list[Point]]


class AlertingRule:
    """One alerting rule's active alerts across evaluations."""

    def __init__(self, rule: Rule, external_labels: dict[str, str], external_url: str) -> None:
        self.rule = rule
        self.external_labels, self.external_url = external_labels, external_url
        self.active: dict[Labels, Alert] = {}
        self.restored = False  # ALERTS series are written once the `for` state is restored

    def _expander(self, point: Point, ts_ms: int, query: Query | None) -> Callable[[str], str]:
        labels = {k: v for k, v in point.labels}

        def template_query(expression: str) -> list[gotemplate.Sample]:
            if query is None:
                return []
            return [gotemplate.Sample(dict(p.labels), p.value) for p in query(expression, ts_ms)]

        def expand(text: str) -> str:
            if "{{" not in text:
                return text
            try:
                return gotemplate.expand(
                    text, self.rule.name, labels, self.external_labels, self.external_url,
                    point.value, template_query,
                )  # fmt: skip
            except gotemplate.TemplateError as error:
                return f"<error expanding template: {error}>"
            except Exception as error:  # a template's query failing is worded as one
                return f"<error expanding template: {error}>"

        return expand

    def evaluate(
        self, points: list[Point], ts_ms: int, query: Query | None = None, limit: int = 0
    ) -> list[tuple[Labels, float]]:
        """Advance the alerts with the expression's result at `ts_ms`; the ALERTS and
        ALERTS_FOR_STATE samples to write (none until restored)."""
        found = self._alerts_of(points, ts_ms, query)
        for labels, alert in found.items():
            held = self.active.get(labels)
            if held is not None and held.state != INACTIVE:
                held.value, held.annotations = alert.value, alert.annotations
                continue
            self.active[labels] = alert
        samples: list[tuple[Labels, float]] = []
        active_count = 0
        for labels, alert in list(self.active.items()):
            if labels not in found and not self._still_active(labels, alert, ts_ms):
                continue
            if labels in found:
                alert.keep_firing_since_ms = 0
            active_count += 1
            if alert.state == PENDING and ts_ms - alert.active_at_ms >= self.rule.for_ms:
                alert.state, alert.fired_at_ms = FIRING, ts_ms
            if self.restored:
                samples.append((self.series("ALERTS", alert, state=True), 1.0))
                # Prometheus writes the activation in whole seconds (time.Unix)
                for_state = float(alert.active_at_ms // 1000)
                samples.append((self.series("ALERTS_FOR_STATE", alert), for_state))
        if limit > 0 and active_count > limit:
            self.active = {}
            raise EvalError(f"exceeded limit of {limit} with {active_count} alerts")
        return samples

    def _alerts_of(
        self, points: list[Point], ts_ms: int, query: Query | None
    ) -> dict[Labels, Alert]:
        """An alert (pending, active now) per point, its labels and annotations expanded."""
        rule = self.rule
        found: dict[Labels, Alert] = {}
        for point in points:
            expand = self._expander(point, ts_ms, query)
            labels = {k: v for k, v in point.labels if k != "__name__"}
            for name, text in rule.labels:
                value = expand(text)
                if value:
                    labels[name] = value
                else:
                    labels.pop(name, None)  # an empty label is no label
            labels["alertname"] = rule.name
            annotations = labels_of({k: expand(text) for k, text in rule.annotations})
            key = labels_of(labels)
            if key in found:
                raise EvalError(
                    "vector contains metrics with the same labelset after applying alert labels"
                )
            found[key] = Alert(key, annotations, PENDING, ts_ms, point.value)
        return found

    def _still_active(self, labels: Labels, alert: Alert, ts_ms: int) -> bool:
        """For an alert absent from this evaluation: whether it keeps firing
        (`keep_firing_for`); otherwise it resolves, and is forgotten when it was only
        pending or resolved more than 15 minutes ago."""
        keep = self._keep_firing(alert, ts_ms)
        if alert.state == PENDING or (
            alert.resolved_at_ms and ts_ms - alert.resolved_at_ms > RESOLVED_RETENTION_MS
        ):
            del self.active[labels]
        if alert.state != INACTIVE and not keep:
            alert.state, alert.resolved_at_ms = INACTIVE, ts_ms
        return keep

    def _keep_firing(self, alert: Alert, ts_ms: int) -> bool:
        if alert.state != FIRING or self.rule.keep_firing_for_ms <= 0:
            return False
        if not alert.keep_firing_since_ms:
            alert.keep_firing_since_ms = ts_ms
        return ts_ms - alert.keep_firing_since_ms < self.rule.keep_firing_for_ms

    def series(self, metric: str, alert: Alert, state: bool = False) -> Labels:
        labels = dict(alert.labels)
        labels["__name__"] = metric
        if state:
            labels["alertstate"] = alert.state
        return labels_of(labels)

    def to_send(
        self, ts_ms: int, interval_ms: int, resend_delay_ms: int = RESEND_DELAY_MS
    ) -> list[Alert]:
        """The alerts due to Alertmanager after the evaluation at `ts_ms` (copies), each
        valid for four intervals or resend delays, whichever is longer."""
        due = []
        for alert in self.active.values():
            if alert.needs_sending(ts_ms, resend_delay_ms):
                alert.last_sent_ms = ts_ms
                alert.valid_until_ms = ts_ms + 4 * max(resend_delay_ms, interval_ms)
                due.append(replace(alert))
        return due

    def firing(self) -> list[Alert]:
        return [a for a in self.active.values() if a.state == FIRING]

    def state(self) -> str:
        """The rule's state: firing if any alert fires, else pending if any is, else inactive."""
        states = {a.state for a in self.active.values()}
        return FIRING if FIRING in states else PENDING if PENDING in states else INACTIVE
