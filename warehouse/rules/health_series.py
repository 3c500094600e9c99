"""GPU health findings as a Prometheus series, so that rule files alert on them: each current
finding of `health_findings` (ok / watch / drain / replace, `warehouse/health`) is a sample of

    wanka_gpu_health{Hostname, gpu, UUID, rule, state, evidence} = severity

written at each rule evaluation time; a finding no longer current gets a staleness marker, so
its alert resolves at once. `deploy/rules/health.rules.yml` turns them into alerts
(`GpuHealthWatch`, `GpuHealthDrain`, `GpuHealthReplace`) with the evidence in the annotations.
"""

from __future__ import annotations

import duckdb

from warehouse.rules.store import Labels, Store, labels_of

METRIC = "wanka_gpu_health"

#: The current findings, worst first per GPU and rule; the evidence is the first event (its
#: kind, code and detail), which stays the same while the finding lasts.
_CURRENT = """
SELECT host, gpu, uuid, rule, state, severity,
       CASE WHEN len(evidence) > 0 THEN concat_ws(' ', evidence[1].kind,
            CAST(evidence[1].code AS VARCHAR), evidence[1].detail) END AS evidence
FROM health_findings
WHERE current AND host IS NOT NULL
"""


class HealthSeries:
    """Writes `wanka_gpu_health` from health_findings; remembers what it wrote last."""

    def __init__(self) -> None:
        self.previous: set[Labels] = set()

    def write(self, store: Store, ts_ms: int) -> int:
        """Write the current findings at `ts_ms`; how many. Nothing when the warehouse has no
        health_findings (a file without the shipped dynamic tables)."""
        try:
            rows = store.cursor.execute(_CURRENT).fetchall()
        except duckdb.CatalogException:
            return 0
        points = []
        for host, gpu, uuid, rule, state, severity, evidence in rows:
            labels = {"__name__": METRIC, "Hostname": host, "rule": rule, "state": state}
            if gpu is not None:
                labels["gpu"] = str(gpu)
            if uuid:
                labels["UUID"] = uuid
            if evidence:
                labels["evidence"] = evidence
            points.append((labels_of(labels), ts_ms, float(severity or 0)))
        now = {labels for labels, _, _ in points}
        gone = [(labels, ts_ms) for labels in self.previous - now]
        store.write(points, gone)
        self.previous = now
        return len(points)
