"""The optional learned predictor (wanka[predict]): no future in its features, a lemon ranked
first, and a clear message without the extra."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from warehouse.faults import learned

DAY = 86_400.0


def history() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Server 0 fails every 5 days; servers 1-39 now and then."""
    rng = np.random.default_rng(1)
    node, start = [0] * 60, [i * 5 * DAY for i in range(60)]
    for _ in range(60):
        node.append(int(rng.integers(1, 40)))
        start.append(float(rng.uniform(0, 300 * DAY)))
    starts = np.array(start)
    return np.array(node), starts, starts + 3600


def test_features_see_only_the_past() -> None:
    node, start, end = history()
    at = 150 * DAY
    now = learned.features(node, start, end, 40, at)
    past = start <= at
    assert np.array_equal(now, learned.features(node[past], start[past], end[past], 40, at))
    assert now.shape == (40, 7) and now[0, 3] == 7  # days 120, 125, ..., 150


def test_the_lemon_ranks_first() -> None:
    pytest.importorskip("sklearn")
    node, start, end = history()
    days = [200 * DAY + i * DAY for i in range(10)]
    up = np.ones((10, 40), dtype=bool)
    scores = learned.sliding_scores(node, start, end, 40, days, up, window_d=100)
    assert (np.argmax(scores, axis=1) == 0).all()
    assert ((scores >= 0) & (scores <= 1)).all()


def test_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.linear_model", None)
    assert not learned.available()
    node, start, end = history()
    with pytest.raises(learned.MissingExtra, match=r"wanka\[predict\]"):
        learned.sliding_scores(node, start, end, 40, [200 * DAY], np.ones((1, 40), dtype=bool))
