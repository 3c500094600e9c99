"""Counters and latency histograms of the serve process, in Prometheus text format.

Kept in memory (a restart starts them at zero, as Prometheus expects of counters). Refresh lag is
not counted here: it is read from `wanka.dynamic_tables` when /metrics is scraped.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict

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
        self._counters: dict[str, dict[Labels, float]] = defaultdict(dict)
        self._help: dict[str, tuple[str, str]] = {}
        self._histograms: dict[Labels, list[int]] = {}
        self._sums: dict[Labels, float] = defaultdict(float)

    def count(self, name: str, help_text: str, value: float = 1, /, **labels: str) -> None:
        """Add `value` to counter `name` with `labels`."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._help.setdefault(name, ("counter", help_text))
            series = self._counters[name]
            series[key] = series.get(key, 0) + value

    def observe_query(self, seconds: float, **labels: str) -> None:
        """Record one query's latency in `wanka_query_duration_seconds`."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            buckets = self._histograms.setdefault(key, [0] * (len(BUCKETS_S) + 1))
            buckets[bisect.bisect_left(BUCKETS_S, seconds)] += 1
            self._sums[key] += seconds

    def render(self, gauges: dict[str, tuple[str, dict[Labels, float]]] | None = None) -> str:
        """The exposition text; `gauges` maps a name to (help, {labels: value}) read just now."""
        lines: list[str] = []
        with self._lock:
            for name, (kind, help_text) in sorted(self._help.items()):
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
                for key, value in sorted(self._counters[name].items()):
                    lines.append(f"{name}{_labels(key)} {_number(value)}")
            name = "wanka_query_duration_seconds"
            lines += [
                f"# HELP {name} Time from receiving a query to its last byte.",
                f"# TYPE {name} histogram",
            ]
            for key, buckets in sorted(self._histograms.items()):
                total = 0
                for bound, n in zip((*BUCKETS_S, float("inf")), buckets, strict=True):
                    total += n
                    le = "+Inf" if bound == float("inf") else f"{bound:g}"
                    lines.append(f"{name}_bucket{_labels((*key, ('le', le)))} {total}")
                lines.append(f"{name}_sum{_labels(key)} {self._sums[key]:.6f}")
                lines.append(f"{name}_count{_labels(key)} {total}")
        for name, (help_text, series) in sorted((gauges or {}).items()):
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
            for key, value in sorted(series.items()):
                lines.append(f"{name}{_labels(key)} {_number(value)}")
        return "\n".join(lines) + "\n"
