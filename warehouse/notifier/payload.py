"""An alert as Alertmanager's API v2 takes it, with Prometheus's fields and timings.

>>> alert = Outgoing({"alertname": "Xid"}, {"summary": "x"}, 60_000, 0, 300_000,
...                  "DCGM_FI_DEV_XID_ERRORS > 0")
>>> body = to_json(alert, {"cluster": "a"}, "http://wanka:8080")
>>> body["labels"], body["startsAt"], body["endsAt"]
({'alertname': 'Xid', 'cluster': 'a'}, '1970-01-01T00:01:00.000Z', '1970-01-01T00:05:00.000Z')
>>> body["generatorURL"]
'http://wanka:8080/graph?g0.expr=DCGM_FI_DEV_XID_ERRORS+%3E+0&g0.tab=1'
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any


@dataclass(frozen=True)
class Outgoing:
    """What the rule evaluation hands over: an alert's labels and annotations (expanded), when
    it fired, when it resolved (0: it has not) and until when it is valid while firing."""

    labels: dict[str, str]
    annotations: dict[str, str]
    fired_at_ms: int
    resolved_at_ms: int
    valid_until_ms: int
    expression: str = ""


def rfc3339(ms: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def generator_url(external_url: str, expression: str) -> str:
    """Prometheus's link back to the expression: its table view."""
    query = urllib.parse.quote_plus(expression)
    return f"{external_url.rstrip('/')}/graph?g0.expr={query}&g0.tab=1"


def to_json(alert: Outgoing, external_labels: dict[str, str], external_url: str) -> dict[str, Any]:
    """The alert's JSON: a label the alert already has wins over an external label of the same
    name, as in Prometheus."""
    labels = {**external_labels, **alert.labels}
    ends = alert.resolved_at_ms or alert.valid_until_ms
    return {
        "labels": dict(sorted(labels.items())),
        "annotations": dict(sorted(alert.annotations.items())),
        "startsAt": rfc3339(alert.fired_at_ms),
        "endsAt": rfc3339(ends),
        "generatorURL": generator_url(external_url, alert.expression),
    }
