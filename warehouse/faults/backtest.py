"""node_risk's score at any past time, for judging it on history (bench/bench_predict.py).

The dynamic table (sql/dynamic/node_risk.sql) holds the score as of the newest evidence. A
backtest needs it as of every day or every arrival of evidence, using only what was known then:
this module computes the same formula over node_signals in numpy, with the weights of
risk_settings. tests/warehouse/faults/test_backtest.py holds it equal to the dynamic table
where both apply (at the newest evidence), so the two cannot drift apart.

    history_ratio = (α + H) / (α + E)     precursor = Σ w · 2^(−age / precursor half-life)
    growth = Σ_kind w_<kind>_growth · max(0, recent − trailing · share) / (trailing · share + c)
    score = history_ratio + precursor + growth

The growth terms count a node's increases of corrected ECC errors, NVLink errors and PCIe
replays in the last growth_recent_h hours (`recent`) against those of the growth_trailing_d
days before (`trailing`, scaled by share = growth_recent_h / 24 / growth_trailing_d), with
c = growth_prior_events.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from math import log

import duckdb
import numpy as np
import numpy.typing as npt

HISTORY_KINDS = ("fault", "drain", "node_fail", "gpu_failure")
PRECURSOR_KINDS = (
    "sbe",
    "row_remap",
    "xid_precursor",
    "nvlink",
    "thermal",
    "pcie_replay",
    "thermal_residual",
)
KINDS = HISTORY_KINDS + PRECURSOR_KINDS
#: The kinds that also count by their growth against the node's own history.
GROWTH_KINDS = ("sbe", "nvlink", "pcie_replay")
DAY_S = 86_400.0

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Signals:
    """node_signals as arrays, sorted by time: node index, time (epoch s), kind index."""

    nodes: tuple[str, ...]
    node: Ints
    at_s: Floats
    kind: Ints

    @staticmethod
    def of(nodes: list[str], at_s: list[float], kinds: list[str]) -> Signals:
        names = tuple(sorted(set(nodes)))
        index = {n: i for i, n in enumerate(names)}
        order = np.argsort(np.asarray(at_s, dtype=np.float64), kind="stable")
        node = np.array([index[n] for n in nodes], dtype=np.int64)[order]
        kind = np.array([KINDS.index(k) for k in kinds], dtype=np.int64)[order]
        return Signals(names, node, np.asarray(at_s, dtype=np.float64)[order], kind)

    @staticmethod
    def load(cur: duckdb.DuckDBPyConnection) -> Signals:
        rows = cur.execute("SELECT node, epoch(signal_at), kind FROM node_signals").fetchall()
        known = [r for r in rows if r[2] in KINDS]
        return Signals.of([r[0] for r in known], [r[1] for r in known], [r[2] for r in known])


def load_settings(cur: duckdb.DuckDBPyConnection) -> dict[str, float]:
    """risk_settings as {name: value}."""
    return {n: float(v) for n, v in cur.execute("SELECT name, value FROM risk_settings").fetchall()}


def _weights(settings: dict[str, float]) -> Floats:
    return np.array([settings[f"w_{k}"] for k in KINDS], dtype=np.float64)


def scores_at(
    signals: Signals, as_of_s: float, settings: dict[str, float]
) -> tuple[Floats, Floats, Floats]:
    """(score, history_ratio, precursor) of every node of `signals` as of `as_of_s`, from the
    evidence up to then; a node with none yet has the prior α / (α + E) and no precursor."""
    known = signals.at_s <= as_of_s
    node, at, kind = signals.node[known], signals.at_s[known], signals.kind[known]
    count = len(signals.nodes)
    if not len(at):
        return np.zeros(count), np.zeros(count), np.zeros(count)
    w = _weights(settings)[kind]
    history = kind < len(HISTORY_KINDS)
    age_d = (as_of_s - at) / DAY_S
    h, p = settings["history_half_life_d"], settings["precursor_half_life_d"]
    held = np.bincount(node, weights=np.where(history, w * 0.5 ** (age_d / h), 0), minlength=count)
    warned = np.bincount(
        node, weights=np.where(history, 0, w * 0.5 ** (age_d / p)), minlength=count
    )
    expected = _expected(
        float(np.sum(np.where(history, w, 0))),
        settings["fleet_nodes"] or len(np.unique(node)),
        (as_of_s - float(at.min())) / DAY_S,
        h,
    )
    alpha = settings["prior_strength"]
    ratio: Floats = ((alpha + held) / (alpha + expected)).astype(np.float64)
    precursor: Floats = np.asarray(warned, dtype=np.float64)
    recent_s, window_s = _windows_s(settings)
    age_s = as_of_s - at
    grown = np.zeros(count)
    for name in GROWTH_KINDS:
        mine = kind == KINDS.index(name)
        recent = np.bincount(node, weights=mine & (age_s < recent_s), minlength=count)
        trailing = np.bincount(
            node, weights=mine & (age_s >= recent_s) & (age_s < window_s), minlength=count
        )
        grown += settings[f"w_{name}_growth"] * growth(recent, trailing, settings)
    return ratio + precursor + grown, ratio, precursor


def _windows_s(settings: dict[str, float]) -> tuple[float, float]:
    """The growth terms' windows: recent [0, first), trailing [first, second) seconds old."""
    recent_s = settings["growth_recent_h"] * 3600
    return recent_s, recent_s + settings["growth_trailing_d"] * DAY_S


def growth(recent: npt.ArrayLike, trailing: npt.ArrayLike, settings: dict[str, float]) -> Floats:
    """max(0, recent − expected) / (expected + c): the excess of the recent increases over what
    the trailing window's rate predicts for the recent window, smoothed by c pseudo-increases.

    >>> s = {"growth_recent_h": 24, "growth_trailing_d": 14, "growth_prior_events": 5}
    >>> float(growth(10.0, 0.0, s)), float(growth(10.0, 140.0, s)), float(growth(1.0, 0.0, s))
    (2.0, 0.0, 0.2)
    """
    share = settings["growth_recent_h"] / 24 / settings["growth_trailing_d"]
    expected = np.asarray(trailing, dtype=np.float64) * share
    excess = np.maximum(0.0, np.asarray(recent, dtype=np.float64) - expected)
    return np.asarray(excess / (expected + settings["growth_prior_events"]), dtype=np.float64)


def _expected(history_weight: float, nodes: float, span_d: float, half_life_d: float) -> float:
    """E: what one node at the fleet's rate gathers, decayed as the evidence is."""
    span = max(span_d, 1.0)
    rate = history_weight / (nodes * span)
    return float(rate * half_life_d / log(2) * (1 - 0.5 ** (span / half_life_d)))


def scores_at_arrivals(signals: Signals, settings: dict[str, float]) -> Floats:
    """Each signal's node's score right after that signal arrived (the moment a score can
    cross a threshold: between arrivals a node's evidence only decays), in signal order."""
    return arrivals(signals, settings)[0]


def arrivals(signals: Signals, settings: dict[str, float]) -> tuple[Floats, Floats, Floats, Floats]:
    """At each arrival, its node's (score, decayed history H, E, growth): what `watch_lasts_s`
    needs to tell how long the score stays above a threshold."""
    w = _weights(settings)[signals.kind]
    history = signals.kind < len(HISTORY_KINDS)
    h, p = settings["history_half_life_d"], settings["precursor_half_life_d"]
    alpha, fixed_nodes = settings["prior_strength"], settings["fleet_nodes"]
    count = len(signals.nodes)
    held, warned, last = np.zeros(count), np.zeros(count), np.full(count, np.nan)
    seen = np.zeros(count, dtype=bool)
    fleet_weight, first = 0.0, float(signals.at_s[0]) if len(signals.at_s) else 0.0
    out = np.empty(len(signals.at_s))
    held_at, expected_at = np.empty(len(signals.at_s)), np.empty(len(signals.at_s))
    grown_at = np.zeros(len(signals.at_s))
    recent_s, window_s = _windows_s(settings)
    growing = {KINDS.index(k): settings[f"w_{k}_growth"] for k in GROWTH_KINDS}
    # each node's times of each growth kind, in order: the two windows are counted by bisection
    times: dict[tuple[int, int], list[float]] = {}
    for j in range(len(signals.at_s)):
        n, t = int(signals.node[j]), float(signals.at_s[j])
        if seen[n]:
            gap_d = (t - last[n]) / DAY_S
            held[n] *= 0.5 ** (gap_d / h)
            warned[n] *= 0.5 ** (gap_d / p)
        seen[n], last[n] = True, t
        if history[j]:
            held[n] += w[j]
            fleet_weight += w[j]
        else:
            warned[n] += w[j]
        kind = int(signals.kind[j])
        if kind in growing:
            times.setdefault((n, kind), []).append(t)
        grown = 0.0
        for k, weight in growing.items():
            seen_times = times.get((n, k))
            if seen_times:
                # age < recent_s: a time after t − recent_s; age < window_s: after t − window_s
                recent = len(seen_times) - bisect_right(seen_times, t - recent_s)
                inside = len(seen_times) - bisect_right(seen_times, t - window_s)
                grown += weight * float(growth(recent, inside - recent, settings))
        nodes = fixed_nodes or int(seen.sum())
        expected = _expected(fleet_weight, nodes, (t - first) / DAY_S, h)
        out[j] = (alpha + held[n]) / (alpha + expected) + warned[n] + grown
        held_at[j], expected_at[j], grown_at[j] = held[n], expected, grown
    return out, held_at, expected_at, grown_at


def watch_lasts_s(
    score: float, held: float, expected: float, threshold: float, settings: dict[str, float]
) -> float:
    """How long a score stays at or above `threshold` with no new evidence, in seconds: the
    history part halves every history half-life, the precursor part every precursor one.

    >>> s = {"prior_strength": 0.5, "history_half_life_d": 30, "precursor_half_life_d": 2}
    >>> round(watch_lasts_s(3.5, 0.0, 0.5, 3.0, s) / 86400, 3)  # 0.5 + 3.0 · 2^(−d/2) = 3
    0.526
    """
    alpha, h = settings["prior_strength"], settings["history_half_life_d"]
    p = settings["precursor_half_life_d"]
    if score < threshold:
        return 0.0
    warned = score - (alpha + held) / (alpha + expected)

    def at(days: float) -> float:
        history = (alpha + held * 0.5 ** (days / h)) / (alpha + expected)
        return float(history + warned * 0.5 ** (days / p))

    low, high = 0.0, 3650.0
    if at(high) >= threshold:
        return high * DAY_S
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if at(middle) >= threshold else (low, middle)
    return low * DAY_S
