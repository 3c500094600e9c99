"""The predictors bench/bench_predict.py judges, each turning node_signals into alert episodes:

- `risk`: node_risk's score (warehouse/faults/backtest.py) at each arrival of evidence; an
  episode from each arrival at or above risk_settings' watch_score for as long as the score
  stays there (node_risk's state), at least `horizon` ('drain' from drain_score); the growth
  terms are taken as held for growth_recent_h after the arrival (they fall as increases leave
  the recent window: an upper bound, no longer than the bench's 24 h horizon);
- `precursor_rules`: the health rules' kind of trigger on the telemetry alone — a row remapped,
  an XID 48/63/64/94/95, or 10 corrected ECC errors within 24 h on the node;
- `repeat`: the baseline of the field — a node that failed (a fault, a drain, a failing XID) is
  flagged for the next 30 days;
- `random_like`: as many episodes as another predictor, of the same lengths, on random nodes at
  random times: what the same alert budget buys by chance.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from warehouse.faults.backtest import HISTORY_KINDS, KINDS, Signals, arrivals, watch_lasts_s
from warehouse.faults.judge import Episode, merged

DAY_S = 86_400.0
_SBE, _REMAP, _XID = KINDS.index("sbe"), KINDS.index("row_remap"), KINDS.index("xid_precursor")


def risk(signals: Signals, settings: dict[str, float], horizon_s: float) -> list[Episode]:
    """An episode from each arrival at or above watch_score, for as long as the score stays
    there without new evidence (node_risk's state), and at least `horizon_s`."""
    scores, held, expected, grown = arrivals(signals, settings)
    watch, drain = settings["watch_score"], settings["drain_score"]
    recent_s = settings["growth_recent_h"] * 3600
    found = []
    for j in np.flatnonzero(scores >= watch).tolist():
        t = float(signals.at_s[j])
        score, g = float(scores[j]), float(grown[j])
        # the growth term is taken as held until this arrival leaves the recent window, then 0
        lasts = max(
            watch_lasts_s(score - g, float(held[j]), float(expected[j]), watch, settings),
            min(recent_s, watch_lasts_s(score - g, float(held[j]), float(expected[j]),
                                        watch - g, settings)),
        )  # fmt: skip
        level = "drain" if scores[j] >= drain else "watch"
        found.append(
            Episode(signals.nodes[int(signals.node[j])], t, t + max(horizon_s, lasts), level)
        )
    return merged(found)


def precursor_rules(signals: Signals, horizon_s: float, sbe_per_day: int = 10) -> list[Episode]:
    found: list[Episode] = []
    recent: dict[int, list[float]] = {}
    for n, t, k in zip(
        signals.node.tolist(), signals.at_s.tolist(), signals.kind.tolist(), strict=True
    ):
        fired = k in (_REMAP, _XID)
        if k == _SBE:
            times = [x for x in recent.get(n, []) if x > t - DAY_S] + [t]
            recent[n] = times
            fired = len(times) >= sbe_per_day
        if fired:
            found.append(Episode(signals.nodes[n], t, t + horizon_s))
    return merged(found)


def repeat(signals: Signals, window_s: float = 30 * DAY_S) -> list[Episode]:
    history = signals.kind < len(HISTORY_KINDS)
    return merged(
        Episode(signals.nodes[n], t, t + window_s)
        for n, t in zip(signals.node[history].tolist(), signals.at_s[history].tolist(), strict=True)
    )


def random_like(
    episodes: Sequence[Episode], nodes: Sequence[str], t0_s: float, t1_s: float, seed: int
) -> list[Episode]:
    rng = np.random.default_rng(seed)
    starts = rng.uniform(t0_s, t1_s, len(episodes))
    picked = rng.integers(len(nodes), size=len(episodes))
    return merged(
        Episode(nodes[int(i)], float(s), float(s) + (e.end_s - e.start_s), e.level)
        for e, s, i in zip(episodes, starts, picked, strict=True)
    )
