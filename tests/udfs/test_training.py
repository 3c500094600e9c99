"""Training FLOPs, duration and MFU: published figures, inverses, and the SQL contract."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.udfs import contract
from udfs import training
from udfs.training import chinchilla_tokens, implied_mfu, training_days, training_flops

test_from_sql, test_sql_agrees_with_python = contract.tests_for(training)


def test_six_n_d() -> None:
    assert training_flops(70e9, 1.4e12) == pytest.approx(5.88e23)
    assert chinchilla_tokens(70e9) == 1.4e12


@given(st.floats(1e18, 1e27), st.integers(1, 100_000), st.floats(10, 5000), st.floats(0.01, 1))
def test_implied_mfu_inverts_training_days(
    flops: float, gpus: int, peak: float, mfu: float
) -> None:
    days = training_days(flops, gpus, peak, mfu)
    assert implied_mfu(flops, gpus, peak, days) == pytest.approx(mfu)


def test_zero_mfu_is_out_of_domain() -> None:
    with pytest.raises(ValueError, match=r"training_days: mfu must be a number in \(0, 1\], got 0"):
        training_days(1e24, 8, 312, 0)
