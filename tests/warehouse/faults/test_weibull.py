"""The right-censored Weibull fit: known distributions recovered, the likelihood's maximum found."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from warehouse.faults.weibull import fit_censored


def log_likelihood(t: np.ndarray, dead: np.ndarray, k: float, scale: float) -> float:
    z = t / scale
    return float(np.sum(dead * (np.log(k / scale) + (k - 1) * np.log(z))) - np.sum(z**k))


@pytest.mark.parametrize(("shape", "scale"), [(0.5, 1000.0), (1.0, 24.0), (2.5, 3.0)])
def test_recovers_a_known_weibull_under_censoring(shape: float, scale: float) -> None:
    rng = np.random.default_rng(43)
    lifetimes = scale * rng.weibull(shape, 20_000)
    censor_at = rng.uniform(0, 3 * scale, lifetimes.size)
    seen = np.minimum(lifetimes, censor_at)
    fit = fit_censored(seen, lifetimes <= censor_at)
    assert fit.shape == pytest.approx(shape, rel=0.03)
    assert fit.scale == pytest.approx(scale, rel=0.05)
    assert 0 < fit.censored < seen.size


def test_weights_count_as_repeated_rows() -> None:
    weighted = fit_censored([3.0, 5.0, 8.0, 20.0], [True, True, True, False], [2, 1, 1, 5])
    repeated = fit_censored([3.0, 3.0, 5.0, 8.0] + [20.0] * 5, [True] * 4 + [False] * 5)
    assert weighted.shape == pytest.approx(repeated.shape, rel=1e-9)
    assert weighted.scale == pytest.approx(repeated.scale, rel=1e-9)


@settings(max_examples=examples(0.5), deadline=None)
@given(
    shape=st.floats(0.3, 4.0),
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(5, 200),
)
def test_no_nearby_shape_or_scale_is_more_likely(shape: float, seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    lifetimes = 100 * rng.weibull(shape, n) + 1e-6
    censor_at = rng.uniform(0, 300, n)
    seen, dead = np.minimum(lifetimes, censor_at) + 1e-6, lifetimes <= censor_at
    if not dead.any():
        with pytest.raises(ValueError, match="no failure"):
            fit_censored(seen, dead)
        return
    try:
        fit = fit_censored(seen, dead)
    except ValueError as outside:  # all failures at one time and the rest censored: k → ∞
        assert "outside" in str(outside)
        return
    best = log_likelihood(seen, dead, fit.shape, fit.scale)
    for dk in (0.99, 1.01):
        for ds in (0.99, 1.01):
            assert log_likelihood(seen, dead, fit.shape * dk, fit.scale * ds) <= best + 1e-7


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="> 0"):
        fit_censored([0.0, 1.0], [True, True])
    with pytest.raises(ValueError, match="same length"):
        fit_censored([1.0, 2.0], [True])
