"""A group's independent queries run at once on several cursors (warehouse/rules/group.py)
store and alert exactly what one cursor evaluating them in order does, a rule reading an
earlier one's output included."""

from __future__ import annotations

from warehouse.rules import rulefile
from warehouse.rules.group import GroupRunner
from warehouse.rules.store import Store, labels_of
from warehouse.rules.testrun import scratch_engine

RULES = """\
groups:
  - name: g
    rules:
      - record: host:temp:max
        expr: max by (Hostname) (temp)
      - record: host:temp:min
        expr: min by (Hostname) (temp)
      - alert: Hot
        expr: temp > 70
      - record: host:temp:spread
        expr: host:temp:max - host:temp:min
      - alert: Broken
        expr: temp + on(gpu) group_left temp
      - record: fleet:temp:avg
        expr: avg(temp)
"""
T0 = 1_800_000_000_000


def outcome(workers: int) -> tuple[list[tuple[object, ...]], list[tuple[str, str]]]:
    with scratch_engine() as engine:
        cur = engine.cursor()
        store = Store(cur, workers=workers)
        store.write(
            (labels_of({"__name__": "temp", "Hostname": f"n{h}", "gpu": str(g)}), T0 + s * 15_000,
             float(50 + 10 * h + g + s))
            for h in range(3) for g in range(2) for s in range(8)
        )  # fmt: skip
        [group] = rulefile.parse_text(RULES, "g.yml")
        runner = GroupRunner(group)
        for alerting in runner.alerting.values():
            alerting.restored = True
        for step in range(8):
            runner.evaluate(store, T0 + step * 15_000)
        rows = cur.execute(
            "SELECT metric, labels, epoch_ms(ts), value FROM prom_samples "
            "WHERE metric <> 'temp' ORDER BY ALL"
        ).fetchall()
        health = [(s.health, s.last_error[:40]) for s in runner.status]
    return rows, health


def test_parallel_queries_store_what_sequential_ones_do() -> None:
    one, health_one = outcome(1)
    two, health_two = outcome(2)
    assert one == two and health_one == health_two
    assert {r[0] for r in one} >= {"host:temp:spread", "ALERTS", "fleet:temp:avg"}
    assert health_one[4][0] == "err"  # many-to-many: marked, and the rules after it go on
    assert health_one[5] == ("ok", "")
