"""What `/api/v1/rules` and `/api/v1/alerts` answer, in Prometheus 2.42's shapes
(docs/querying/api.md), from the groups' state; `wanka.rules` / `wanka.alerts` hold the same.

>>> float_exp(1.0), float_exp(0.25), float_exp(12345.0)
('1e+00', '2.5e-01', '1.2345e+04')
>>> rfc3339_nano(1_700_000_000_123), rfc3339_nano(None)
('2023-11-14T22:13:20.123Z', '0001-01-01T00:00:00Z')
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from warehouse.rules.alerts import INACTIVE, Alert, AlertingRule
from warehouse.rules.gotemplate.gofmt import float_exp
from warehouse.rules.group import GroupRunner


def rfc3339_nano(ms: int | None) -> str:
    """Go's time in RFC 3339 with the fraction it has; Go's zero time for None."""
    if ms is None:
        return "0001-01-01T00:00:00Z"
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    fraction = f".{ms % 1000:03d}".rstrip("0").rstrip(".")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def alert_json(alert: Alert) -> dict[str, Any]:
    return {
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "state": alert.state,
        "activeAt": rfc3339_nano(alert.active_at_ms),
        "value": float_exp(alert.value),
    }


def _active(alerting: AlertingRule) -> list[Alert]:
    return [a for a in alerting.active.values() if a.state != INACTIVE]


def rules_data(runners: Iterable[GroupRunner], kind: str | None = None) -> dict[str, Any]:
    """`data` of /api/v1/rules; `kind` "alert" or "record" keeps only those rules."""
    groups = []
    for runner in runners:
        rules: list[dict[str, Any]] = []
        for index, rule in enumerate(runner.group.rules):
            status = runner.status[index]
            if kind is not None and rule.kind != kind:
                continue
            common = {
                "name": rule.name,
                "query": rule.expr,
                "labels": dict(rule.labels),
                "health": status.health,
                "evaluationTime": status.evaluation_s,
                "lastEvaluation": rfc3339_nano(status.last_evaluation_ms),
            }
            if status.last_error:
                common["lastError"] = status.last_error
            if rule.kind == "alert":
                alerting = runner.alerting[index]
                rules.append(
                    {
                        "state": alerting.state(),
                        **common,
                        "duration": rule.for_ms / 1000,
                        "keepFiringFor": rule.keep_firing_for_ms / 1000,
                        "annotations": dict(rule.annotations),
                        "alerts": [alert_json(a) for a in _active(alerting)],
                        "type": "alerting",
                    }
                )
            else:
                rules.append({**common, "type": "recording"})
        groups.append(
            {
                "name": runner.group.name,
                "file": runner.group.file,
                "rules": rules,
                "interval": runner.interval_ms / 1000,
                "limit": runner.group.limit,
                "evaluationTime": runner.evaluation_s,
                "lastEvaluation": rfc3339_nano(runner.last_evaluation_ms),
            }
        )
    return {"groups": groups}


def alerts_data(runners: Iterable[GroupRunner]) -> dict[str, Any]:
    """`data` of /api/v1/alerts: every pending and firing alert."""
    return {
        "alerts": [
            alert_json(alert)
            for runner in runners
            for alerting in runner.alerting.values()
            for alert in _active(alerting)
        ]
    }
