"""The server's rule groups: an alert's `for` restored after a restart from ALERTS_FOR_STATE as
Prometheus restores it, a rule whose query runs past the time limit marked `err` while the
others go on, and a template's failure sent as its text."""

from __future__ import annotations

import time

from warehouse.rules import rulefile
from warehouse.rules.manager import RuleConfig, RuleManager
from warehouse.rules.store import Store, labels_of
from warehouse.rules.testrun import scratch_engine

RULES = """\
groups:
  - name: g
    interval: 1m
    rules:
      - alert: Slow
        expr: gpu_errors > 0
        for: 15m
"""
MIN = 60_000
T0 = 1_800_000_000_000 // MIN * MIN


def _manager(text: str) -> RuleManager:
    manager = RuleManager()
    manager.apply(RuleConfig(interval_ms=MIN), rulefile.parse_text(text, "g.yml"))
    return manager


def _run(manager: RuleManager, store: Store, at: int) -> list[str]:
    sent = []
    for runner, ts in manager.due(at):
        sent += [a.labels["alertname"] for a in manager.evaluate(runner, store, ts)]
    return sent


def test_for_state_is_restored_after_a_restart_as_prometheus_does() -> None:
    with scratch_engine() as engine:
        store = Store(engine.cursor())
        series = labels_of({"__name__": "gpu_errors", "gpu": "0"})
        store.write((series, T0 + i * MIN, 1.0) for i in range(0, 40))
        before = _manager(RULES)
        for i in range(0, 5):  # active from T0, pending for 4 minutes, then the server stops
            assert _run(before, store, T0 + i * MIN) == []
        after = _manager(RULES)  # restarted at T0 + 10m: 6 minutes down
        _run(after, store, T0 + 10 * MIN)
        [alert] = after.runners[("g.yml", "g")].alerting[0].active.values()
        # 4 of 15 minutes were spent pending; 11 remain (over the 10-minute grace period), so
        # the activation moves on by the 6 minutes the server was down
        assert alert.active_at_ms == T0 + 6 * MIN
        assert _run(after, store, T0 + 20 * MIN) == []
        assert _run(after, store, T0 + 21 * MIN) == ["Slow"]


def test_a_rule_over_the_time_limit_is_err_and_the_others_go_on() -> None:
    text = """\
groups:
  - name: g
    rules:
      - record: slow:count
        expr: count(max_over_time(big[4d:1s]))
      - record: fast:one
        expr: vector(1)
"""
    with scratch_engine() as engine:
        cur = engine.cursor()
        store = Store(cur)
        rows = ((labels_of({"__name__": "big", "i": str(i % 50)}), T0 - i * 1000, float(i))
                for i in range(300_000))  # fmt: skip
        store.write(rows)
        manager = _manager(text)
        [(runner, ts)] = manager.due(T0)
        started = time.perf_counter()
        # a subquery of 300,000 steps over 50 series takes seconds; vector(1) a millisecond
        manager.evaluate(runner, Store(cur, timeout_s=0.5), ts)
        assert time.perf_counter() - started < 5  # stopped at its limit, not run to the end
        slow, fast = runner.status
        assert slow.health == "err" and "timed out" in slow.last_error
        assert fast.health == "ok"
        assert store.query("fast:one", T0) != []
