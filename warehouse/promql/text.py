"""Values and times as the Prometheus query API writes them (Go's FormatFloat 'f', -1; seconds),
for the SQL route's answers (`render.py`) and the fast path's (`native.py`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


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


def values_text(values: np.ndarray) -> pa.StringArray:
    """The values as `value_text` writes them. Arrow writes the shortest digits that read back
    as the value, as `repr` does, positionally where it can: its texts with an exponent, a NaN
    or an infinity are written by `value_text` instead."""
    texts = pc.cast(pa.array(values, type=pa.float64()), pa.string())
    odd = np.flatnonzero(pc.match_substring_regex(texts, "[eni]").to_numpy(zero_copy_only=False))
    if not len(odd):
        return texts
    found = texts.to_pylist()
    for at in odd.tolist():
        found[at] = value_text(values[at])
    return pa.array(found, type=pa.string())
