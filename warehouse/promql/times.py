"""Times and durations as Prometheus's HTTP API takes them: Unix seconds (fractions allowed) or
RFC 3339 for a time, seconds or a PromQL duration (`1m`, `1h30m`) for a duration. The query
API's parameters and the arguments of promql_range / promql_query are read the same way."""

from __future__ import annotations

import math
from datetime import datetime

import promql_parser as pp

#: Durations past this many seconds do not fit Prometheus's int64 milliseconds exactly.
_MAX_S = 2**53 / 1000


def seconds(text: str) -> float | None:
    """A time in Unix seconds, or None when `text` is not one (NaN and ±Inf are not)."""
    try:
        found = float(text)
    except ValueError:
        try:
            found = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return found if math.isfinite(found) else None


def duration_ms(text: str) -> int | None:
    """A duration in milliseconds, or None when `text` is not one."""
    try:
        found = float(text)
    except ValueError:
        try:
            return round(pp.parse_duration(text).total_seconds() * 1000)
        except ValueError:
            return None
    return round(found * 1000) if math.isfinite(found) and abs(found) <= _MAX_S else None
