"""A learned fault predictor, with the optional extra `pip install wanka[predict]` (scikit-learn).

It earns its place only by beating the rules on later, held-out time at the same alert budget
(bench/bench_predict.py reports it beside them); without the extra nothing here is imported and
wanka works unchanged.

Each (server, day) is described by what was known that day from node_faults alone — faults
decayed at half-lives of 3, 14 and 60 days, faults in the last 30 days and in all, days since
the last fault began and since the last repair ended — and labelled by whether the server
faults within the horizon. A logistic regression is trained on a sliding window of past days
whose labels were complete by then (no day's own future leaks in) and retrained every
`retrain_every_d` days.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DAY_S = 86_400.0
HALF_LIVES_D = (3.0, 14.0, 60.0)
CAP_D = 365.0

Floats = npt.NDArray[np.float64]


class MissingExtra(RuntimeError):
    """scikit-learn is not installed: `pip install wanka[predict]`."""


def available() -> bool:
    """Whether the extra is installed."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return False
    return True


def features(
    node: npt.NDArray[np.int64], start_s: Floats, end_s: Floats, servers: int, at_s: float
) -> Floats:
    """One row per server: what its fault history says at `at_s` (see the module docstring)."""
    known = start_s <= at_s
    n, start, end = node[known], start_s[known], end_s[known]
    age_d = (at_s - start) / DAY_S
    columns = [np.bincount(n, weights=0.5 ** (age_d / h), minlength=servers) for h in HALF_LIVES_D]
    columns.append(np.bincount(n, weights=(age_d <= 30).astype(float), minlength=servers))
    columns.append(np.log1p(np.bincount(n, minlength=servers).astype(float)))
    since_start = np.full(servers, CAP_D)
    np.minimum.at(since_start, n, np.minimum(age_d, CAP_D))
    repaired = end <= at_s
    since_repair = np.full(servers, CAP_D)
    np.minimum.at(since_repair, n[repaired], np.minimum((at_s - end[repaired]) / DAY_S, CAP_D))
    columns += [np.log1p(since_start), np.log1p(since_repair)]
    return np.column_stack(columns).astype(np.float64)


def sliding_scores(
    node: npt.NDArray[np.int64],
    start_s: Floats,
    end_s: Floats,
    servers: int,
    days_s: Sequence[float],
    up: npt.NDArray[np.bool_],
    *,
    horizon_d: float = 7,
    window_d: int = 150,
    retrain_every_d: int = 30,
) -> Floats:
    """The model's probability of a fault within the horizon, per judged day (`days_s`, whole
    days apart) and server; trained on the `window_d` days whose labels ended before each."""
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        raise MissingExtra("the learned predictor needs pip install 'wanka[predict]'") from None
    out = np.zeros((len(days_s), servers))
    model = None
    for i, day in enumerate(days_s):
        if model is None or i % retrain_every_d == 0:
            last = day - horizon_d * DAY_S  # a label complete by `day`
            rows, labels = [], []
            for back in range(window_d):
                t = last - back * DAY_S
                if t < float(start_s.min()):
                    break
                running = _up(node, start_s, end_s, servers, t)
                ahead = (start_s > t) & (start_s <= t + horizon_d * DAY_S)
                y = np.zeros(servers, dtype=bool)
                y[node[ahead]] = True
                rows.append(features(node, start_s, end_s, servers, t)[running])
                labels.append(y[running])
            x, y_all = np.vstack(rows), np.concatenate(labels)
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            model.fit(x, y_all)
        probability = model.predict_proba(features(node, start_s, end_s, servers, day))[:, 1]
        out[i] = np.where(up[i], probability, -np.inf)
    return out


def _up(
    node: npt.NDArray[np.int64], start_s: Floats, end_s: Floats, servers: int, at_s: float
) -> npt.NDArray[np.bool_]:
    running = np.ones(servers, dtype=bool)
    running[node[(start_s <= at_s) & (end_s > at_s)]] = False
    return running
