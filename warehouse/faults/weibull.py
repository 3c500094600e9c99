"""A right-censored Weibull fit by maximum likelihood, in numpy (no scipy needed).

For lifetimes t_i, each either a failure (δ_i = 1) or censored (δ_i = 0, still running), with
weights w_i (how many identical lifetimes a row stands for), the log-likelihood of a Weibull with
shape k and scale λ is

    ℓ = Σ δ_i w_i [ln k − k ln λ + (k − 1) ln t_i] − Σ w_i (t_i / λ)^k.

For a given k the best λ^k is Σ w t^k / d (d = Σ δ w, the failures), and the remaining equation
in k, the profile score

    g(k) = d / k + Σ δ w ln t − d · Σ w t^k ln t / Σ w t^k = 0,

falls strictly as k grows (Lawless, "Statistical Models and Methods for Lifetime Data", 2003,
section 5.2), so bisection on ln k finds the one root. sql/analyses/fault_weibull.sql maximises
the same profile likelihood on a grid in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Weibull:
    """A fitted Weibull: shape k, scale λ (in the lifetimes' unit), and the data's counts."""

    shape: float
    scale: float
    failures: float
    censored: float


def fit_censored(
    times: npt.ArrayLike,
    failed: npt.ArrayLike,
    weights: npt.ArrayLike | None = None,
    *,
    tolerance: float = 1e-10,
) -> Weibull:
    """The maximum-likelihood Weibull of right-censored lifetimes.

    Args:
        times: lifetimes, > 0.
        failed: True where the lifetime ended in a failure, False where it was censored.
        weights: how many lifetimes each row stands for (default 1).
        tolerance: relative precision of the shape.

    Raises:
        ValueError: with no failure, a lifetime <= 0, or arrays of different lengths.

    >>> fit = fit_censored([1.0, 2.0, 3.0, 4.0], [True, True, True, False])
    >>> round(fit.shape, 3), round(fit.scale, 3)
    (1.832, 3.162)
    """
    t = np.asarray(times, dtype=np.float64)
    dead = np.asarray(failed, dtype=bool)
    w = np.ones_like(t) if weights is None else np.asarray(weights, dtype=np.float64)
    if not (t.shape == dead.shape == w.shape):
        raise ValueError("times, failed and weights must have the same length")
    if np.any(t <= 0):
        raise ValueError("every lifetime must be > 0")
    d = float(np.sum(w[dead]))
    if d <= 0:
        raise ValueError("no failure among the lifetimes: the shape cannot be estimated")
    log_t = np.log(t)
    # scale the times so that t^k neither overflows nor underflows while k is searched
    log_t = log_t - log_t.max()
    sum_log_failed = float(np.sum(w[dead] * log_t[dead]))

    def score(k: float) -> float:
        powered = w * np.exp(k * log_t)
        return d / k + sum_log_failed - d * float(np.sum(powered * log_t) / np.sum(powered))

    low, high = 1e-3, 1e3
    if score(low) < 0 or score(high) > 0:
        raise ValueError("the shape lies outside 0.001..1000: the lifetimes do not fit a Weibull")
    while np.log(high / low) > tolerance:
        middle = float(np.sqrt(low * high))
        if score(middle) > 0:
            low = middle
        else:
            high = middle
    k = float(np.sqrt(low * high))
    shift = float(np.log(t).max())
    scale = float(np.exp(shift + np.log(np.sum(w * np.exp(k * log_t)) / d) / k))
    return Weibull(k, scale, d, float(np.sum(w[~dead])))
