"""GPU health findings reach the rules as `wanka_gpu_health` (warehouse/rules/health_series.py):
the shipped deploy/rules/health.rules.yml turns a drain finding into an alert with the GPU,
host, rule, state and evidence, and resolves it when the finding ends."""

from __future__ import annotations

from tests.conftest import REPO
from warehouse.rules import rulefile
from warehouse.rules.group import GroupRunner
from warehouse.rules.health_series import HealthSeries
from warehouse.rules.store import Store
from warehouse.rules.testrun import scratch_engine

T0 = 1_800_000_000_000
FINDINGS = """
CREATE TABLE health_findings AS SELECT * FROM (VALUES
    ('xid', 'drain', 'node-7', 3, 'GPU-abc', 1::BIGINT, 2,
     [{'ts': TIMESTAMPTZ '2027-01-15 08:00:00+00', 'kind': 'xid', 'code': 79,
       'detail': 'GPU has fallen off the bus'}], true),
    ('sbe_climb', 'watch', 'node-8', 0, NULL, 4::BIGINT, 1, [], false)
) AS t(rule, state, host, gpu, uuid, n, severity, evidence, current)
"""


def test_a_drain_finding_is_an_alert_with_its_evidence_until_it_ends() -> None:
    with scratch_engine() as engine:
        cur = engine.cursor()
        cur.execute(FINDINGS)
        store, series = Store(cur), HealthSeries()
        [group] = rulefile.load(REPO / "deploy" / "rules" / "health.rules.yml")
        runner = GroupRunner(group)
        for alerting in runner.alerting.values():
            alerting.restored = True
        assert series.write(store, T0) == 1  # only the current finding
        runner.evaluate(store, T0)
        [drain] = runner.alerting[1].firing()
        labels, annotations = dict(drain.labels), dict(drain.annotations)
        assert labels == {
            "alertname": "GpuHealthDrain", "Hostname": "node-7", "gpu": "3", "UUID": "GPU-abc",
            "rule": "xid", "state": "drain", "evidence": "xid 79 GPU has fallen off the bus",
            "severity": "critical", "action": "drain",
        }  # fmt: skip
        assert annotations["summary"] == "GPU 3 on node-7: drain (xid)"
        assert "Evidence: xid 79 GPU has fallen off the bus." in annotations["description"]
        cur.execute("UPDATE health_findings SET current = false")
        assert series.write(store, T0 + 15_000) == 0  # a staleness marker ends the series
        runner.evaluate(store, T0 + 15_000)
        assert runner.alerting[1].firing() == []
        assert runner.alerting[1].state() == "inactive"
