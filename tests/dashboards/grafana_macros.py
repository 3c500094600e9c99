"""The Grafana PostgreSQL data source's macros, expanded as Grafana does before it sends SQL.

Only the macros wanka's dashboards use: `$__timeFilter(col)`, `$__timeGroup(col, 'iv')`,
`$__timeGroupAlias(col, 'iv')`, `$__interval`, `$__timeFrom()`, `$__timeTo()`. Grafana's
PostgreSQL macro engine (pkg/tsdb/grafana-postgresql-datasource/macros.go) writes a time filter
as `col BETWEEN '<RFC 3339>' AND '<RFC 3339>'` and a time group as
`floor(extract(epoch from col)/<seconds>)*<seconds>`.
"""

from __future__ import annotations

import re
from datetime import datetime

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def interval_seconds(text: str) -> int:
    """Grafana's interval text ('30s', '1m', '1h', '1d') in seconds.

    >>> interval_seconds("'5m'"), interval_seconds("1h")
    (300, 3600)
    """
    found = re.fullmatch(r"'?(\d+)([smhdw])'?", text.strip())
    if not found:
        raise ValueError(f"not a Grafana interval: {text!r}")
    return int(found[1]) * _UNITS[found[2]]


def expand(sql: str, start: datetime, end: datetime, interval: str = "1m") -> str:
    """`sql` with the macros replaced for the time range [start, end] and `$__interval`.

    >>> from datetime import UTC
    >>> t0, t1 = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    >>> print(expand("SELECT $__timeGroupAlias(ts, $__interval)", t0, t1))
    SELECT floor(extract(epoch from ts)/60)*60 AS "time"
    >>> print(expand("WHERE $__timeFilter(ts)", t0, t1))
    WHERE ts BETWEEN '2026-11-01T00:00:00Z' AND '2026-11-02T00:00:00Z'
    """

    def rfc3339(t: datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")

    text = sql.replace("$__interval", interval)
    text = re.sub(
        r"\$__timeFilter\(([^)]+)\)",
        lambda m: f"{m[1].strip()} BETWEEN '{rfc3339(start)}' AND '{rfc3339(end)}'",
        text,
    )

    def group(m: re.Match[str]) -> str:
        column, _, every = m[2].rpartition(",")
        seconds = interval_seconds(every)
        grouped = f"floor(extract(epoch from {column.strip()})/{seconds})*{seconds}"
        return grouped + (' AS "time"' if m[1] else "")

    text = re.sub(r"\$__timeGroup(Alias)?\(([^)]+)\)", group, text)
    text = text.replace("$__timeFrom()", f"'{rfc3339(start)}'")
    text = text.replace("$__timeTo()", f"'{rfc3339(end)}'")
    if "$__" in text:
        raise ValueError(f"a Grafana macro this expander does not know: {text}")
    return text
