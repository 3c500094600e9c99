"""Counters and latency histograms of the serve process, in Prometheus text format.

Kept in memory (a restart starts them at zero, as Prometheus expects of counters). Refresh lag is
not counted here: it is read from `wanka.dynamic_tables` when /metrics is scraped. Every family
is declared once, with its help text, in `metric_families.py`.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict

from service.serve.metric_families import QUERY_DURATION, Counter, Family, Gauge

#: Latency bucket bounds in seconds (Prometheus `le` labels).
BUCKETS_S = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)

Labels = tuple[tuple[str, str], ...]
#: Gauges read just now: each family's value per label set.
Gauges = dict[Gauge, dict[Labels, float]]


def _labels(labels: Labels) -> str:
    """Prometheus label text.

    >>> _labels((("face", "http"), ("status", "200")))
    '{face="http",status="200"}'
    >>> _labels(())
    ''
    """
    if not labels:
        return ""
    body = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels
    )
    return "{" + body + "}"


def _number(value: float) -> str:
    """A sample value in full precision (`:g` keeps six digits: counters past a million blur).

    >>> _number(3), _number(0.25), _number(773022208.0), _number(41369601)
    ('3', '0.25', '773022208', '41369601')
    """
    value = float(value)
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


class Metrics:
    """Thread-safe counters and histograms; `render()` writes the exposition text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[Counter, dict[Labels, float]] = {}
        self._histograms: dict[Labels, list[int]] = {}
        self._sums: dict[Labels, float] = defaultdict(float)

    def count(self, counter: Counter, value: float = 1, /, **labels: str) -> None:
        """Add `value` to `counter` with `labels`."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            series = self._counters.setdefault(counter, {})
            series[key] = series.get(key, 0) + value

    def observe_query(self, seconds: float, **labels: str) -> None:
        """Record one query's latency in `wanka_query_duration_seconds`."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            buckets = self._histograms.setdefault(key, [0] * (len(BUCKETS_S) + 1))
            buckets[bisect.bisect_left(BUCKETS_S, seconds)] += 1
            self._sums[key] += seconds

    def render(self, gauges: Gauges | None = None) -> str:
        """The exposition text: the counters counted so far, the query histogram, then `gauges`
        (read just now), each family in name order."""
        lines: list[str] = []
        with self._lock:
            for counter in sorted(self._counters, key=lambda family: family.name):
                lines += _header(counter)
                for key, value in sorted(self._counters[counter].items()):
                    lines.append(f"{counter.name}{_labels(key)} {_number(value)}")
            name = QUERY_DURATION.name
            lines += _header(QUERY_DURATION)
            for key, buckets in sorted(self._histograms.items()):
                total = 0
                for bound, n in zip((*BUCKETS_S, float("inf")), buckets, strict=True):
                    total += n
                    le = "+Inf" if bound == float("inf") else f"{bound:g}"
                    lines.append(f"{name}_bucket{_labels((*key, ('le', le)))} {total}")
                lines.append(f"{name}_sum{_labels(key)} {self._sums[key]:.6f}")
                lines.append(f"{name}_count{_labels(key)} {total}")
        for gauge, series in sorted((gauges or {}).items(), key=lambda item: item[0].name):
            lines += _header(gauge)
            for key, value in sorted(series.items()):
                lines.append(f"{gauge.name}{_labels(key)} {_number(value)}")
        return "\n".join(lines) + "\n"


def _header(family: Family) -> list[str]:
    return [f"# HELP {family.name} {family.help}", f"# TYPE {family.name} {family.kind}"]
