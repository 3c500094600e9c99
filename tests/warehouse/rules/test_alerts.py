"""The alert state machine's invariants (warehouse/rules/alerts.py), for any sequence of
evaluations: an alert fires exactly when its series has been returned at every evaluation for
`for`, resolves at the first evaluation without it (with no `keep_firing_for`), is never sent
while pending, and a resolved alert is sent at once with `endsAt` its resolution."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from warehouse.rules.alerts import FIRING, INACTIVE, PENDING, AlertingRule
from warehouse.rules.rulefile import Rule
from warehouse.rules.store import Point, labels_of

STEP = 15_000
SERIES = labels_of({"__name__": "x", "gpu": "0"})


@settings(max_examples=examples(1.0))
@given(st.lists(st.booleans(), min_size=1, max_size=40), st.integers(0, 6))
def test_an_alert_fires_after_for_and_resolves_at_once(active: list[bool], for_steps: int) -> None:
    rule = AlertingRule(Rule("alert", "A", "x > 0", for_ms=for_steps * STEP), {}, "")
    rule.restored = True
    run = 0  # evaluations in a row that returned the series
    for step, present in enumerate(active):
        ts = step * STEP
        samples = rule.evaluate([Point(SERIES, 1.0)] if present else [], ts)
        sent = rule.to_send(ts, STEP)
        run = run + 1 if present else 0
        states = {a.state for a in rule.active.values()}
        if present:
            expected = FIRING if run - 1 >= for_steps else PENDING
            assert states == {expected}
            state_sample = dict(
                next(labels for labels, _ in samples if dict(labels)["__name__"] == "ALERTS")
            )
            assert state_sample["alertstate"] == expected
        else:
            assert states <= {INACTIVE} and samples == []
        assert all(a.state != PENDING for a in sent)
        for alert in sent:
            if alert.state == INACTIVE:
                assert alert.resolved_at_ms == ts or alert.resolved_at_ms < ts
            else:
                assert alert.valid_until_ms == ts + 4 * 60_000


def test_keep_firing_for_holds_a_firing_alert_after_its_series_goes() -> None:
    rule = AlertingRule(Rule("alert", "A", "x > 0", keep_firing_for_ms=2 * STEP), {}, "")
    states = []
    for step, present in enumerate([True, False, False, False, True]):
        rule.evaluate([Point(SERIES, 1.0)] if present else [], step * STEP)
        states.append(rule.state())
    assert states == [FIRING, FIRING, FIRING, INACTIVE, FIRING]


def test_firing_is_resent_every_minute_and_a_resolution_for_15_minutes() -> None:
    rule = AlertingRule(Rule("alert", "A", "x > 0"), {}, "")
    sent_at: list[tuple[int, str, int]] = []
    for step in range(0, 100):  # 15 s evaluations: firing for 5 minutes, then resolved
        ts = step * STEP
        rule.evaluate([Point(SERIES, 1.0)] if step < 20 else [], ts)
        for alert in rule.to_send(ts, STEP):
            ends = alert.resolved_at_ms or alert.valid_until_ms
            sent_at.append((ts // 1000, alert.state, ends // 1000))
    firing = [s for s in sent_at if s[1] == FIRING]
    resolved = [s for s in sent_at if s[1] == INACTIVE]
    # at once, then every minute (the first evaluation past a minute since the last send)
    assert [t for t, _, _ in firing] == [0, 75, 150, 225]
    assert all(ends == t + 240 for t, _, ends in firing)  # endsAt: 4 minutes on
    # resolved at 300 s: sent then, and again every minute for 15 minutes, endsAt the resolution
    assert [t for t, _, _ in resolved][:2] == [300, 375] and resolved[-1][0] <= 300 + 15 * 60
    assert all(ends == 300 for _, _, ends in resolved)
    assert rule.active == {}  # forgotten after the 15 minutes
