"""Values and times as the Prometheus query API writes them (Go's FormatFloat 'f', -1; seconds),
for the SQL route's answers (`render.py`) and the fast path's (`native.py`)."""

from __future__ import annotations

import numpy as np


def value_text(value: float) -> str:
    """As Go's FormatFloat(v, 'f', -1, 64): `repr` where that agrees, else numpy's shortest
    positional digits; NaN and ±Inf as Prometheus writes them.

    >>> [value_text(v) for v in (1.0, -0.0, 2.5, 1e-7, float("nan"), float("-inf"))]
    ['1', '-0', '2.5', '0.0000001', 'NaN', '-Inf']
    """
    value = float(value)  # a DECIMAL column's value too
    magnitude = abs(value)
    if 1e-4 <= magnitude < 1e16 or magnitude == 0:
        found = repr(value)
        return found[:-2] if found.endswith(".0") else found
    if value != value:
        return "NaN"
    if magnitude == float("inf"):
        return "+Inf" if value > 0 else "-Inf"
    return str(np.format_float_positional(value, unique=True, trim="-"))


def seconds_text(ms_: int) -> str:
    """A time as Prometheus writes it: seconds, a whole number when whole."""
    return str(ms_ // 1000 if ms_ % 1000 == 0 else ms_ / 1000)


def values_text(values: np.ndarray) -> list[str]:
    """The values as `value_text` writes them; `repr` at once where every one agrees."""
    magnitude = np.abs(values)
    if np.all(((magnitude >= 1e-4) & (magnitude < 1e16)) | (values == 0)):
        return [t[:-2] if t.endswith(".0") else t for t in map(repr, values.tolist())]
    return [value_text(v) for v in values.tolist()]
