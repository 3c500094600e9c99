"""Durations as Prometheus's rule and test files write them (`model.Duration`): whole units from
years down to milliseconds, largest first, each at most once (`1h30m`, `90s`, `0`).

>>> parse_ms("1h30m"), parse_ms("0"), parse_ms("500ms")
(5400000, 0, 500)
>>> format_ms(5_400_000), format_ms(0), format_ms(90_000), format_ms(86_400_000)
('1h30m', '0s', '1m30s', '1d')
"""

from __future__ import annotations

import re

_UNITS = (
    ("y", 365 * 86_400_000), ("w", 7 * 86_400_000), ("d", 86_400_000), ("h", 3_600_000),
    ("m", 60_000), ("s", 1_000), ("ms", 1),
)  # fmt: skip
_PATTERN = re.compile("".join(rf"(?:([0-9]+){unit})?" for unit, _ in _UNITS))


class BadDuration(ValueError):
    """Text that is not a Prometheus duration."""


def parse_ms(text: str) -> int:
    """`text` in milliseconds; BadDuration when it is not a duration."""
    if text == "0":
        return 0
    found = _PATTERN.fullmatch(text)
    if text == "" or found is None:
        raise BadDuration(f'not a valid duration string: "{text}"')
    return sum(int(n) * size for n, (_, size) in zip(found.groups(), _UNITS, strict=True) if n)


def format_ms(ms: int) -> str:
    """As Prometheus prints a duration: largest units first, `0s` for nothing."""
    if ms == 0:
        return "0s"
    parts = []
    for unit, size in _UNITS:
        if ms >= size:
            parts.append(f"{ms // size}{unit}")
            ms %= size
    return "".join(parts)
