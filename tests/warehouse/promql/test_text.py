"""Values as the Prometheus query API writes them: the fast path's texts made all at once by
Arrow are those `value_text` writes one by one (Go's FormatFloat 'f', -1)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse.promql.text import value_text, values_text

EDGES = [0.0, -0.0, 1.0, 1e-4, 9.9999e-5, 1e14, 1e15, 1.5e15, 2.0**53, 1e16, 1e21, 1e-7,
         float("nan"), float("inf"), float("-inf"), 0.1 + 0.2, 1 / 3, 5e-324,
         1.7976931348623157e308]  # fmt: skip
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(EDGES)


@settings(max_examples=300, deadline=None)
@given(st.lists(FLOATS, max_size=50))
def test_arrow_writes_each_value_as_value_text_does(values: list[float]) -> None:
    array = np.array(values, dtype=np.float64)
    assert values_text(array).to_pylist() == [value_text(v) for v in values]


def test_the_edges() -> None:
    assert values_text(np.array(EDGES)).to_pylist() == [
        "0", "-0", "1", "0.0001", "0.000099999", "100000000000000", "1000000000000000",
        "1500000000000000", "9007199254740992", "10000000000000000", "1000000000000000000000",
        "0.0000001", "NaN", "+Inf", "-Inf", "0.30000000000000004", "0.3333333333333333",
        value_text(5e-324), value_text(1.7976931348623157e308),
    ]  # fmt: skip
