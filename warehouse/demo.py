"""The demo warehouse: a simulated 10,000-GPU cluster loaded into one database file."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from warehouse.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster

#: Tables the demo owns; a rebuild empties exactly these, in this order, before loading.
DEMO_TABLES = ("sites", "clusters", "nodes", "jobs", "job_steps", "job_events", "gpu_metrics")

#: The demo always starts here, so the same demo run twice is recognised as built.
DEMO_START = datetime(2026, 11, 1, tzinfo=UTC)

EXAMPLE_QUERIES = {
    "GPU utilisation and power per cluster, last hour": """
SELECT n.cluster, n.gpu_model,
       round(avg(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL'), 1) AS util_pct,
       round(sum(m.value) FILTER (WHERE m.metric = 'DCGM_FI_DEV_POWER_USAGE')
             / count(DISTINCT m.ts) / 1e6, 3) AS avg_power_mw
FROM gpu_metrics m JOIN nodes n USING (host)
GROUP BY ALL ORDER BY n.cluster""",
    "GPU-hours by job state": """
SELECT state, count(*) AS jobs,
       round(sum(gpus * coalesce(elapsed_s, 0)) / 3600) AS gpu_hours
FROM jobs GROUP BY state ORDER BY gpu_hours DESC""",
    "Hosts whose compute NIC is limited by its PCIe slot": """
SELECT n.host, n.nic_model, k.line_rate_gbps, n.pcie_gen
FROM nodes n JOIN nic_models k ON k.model = n.nic_model
WHERE k.pcie_gen > n.pcie_gen LIMIT 10""",
}


@dataclass
class DemoSummary:
    """What a demo build produced, for the person who ran it."""

    config: dict[str, object]
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    rebuilt: bool = True

    @property
    def samples(self) -> int:
        return self.rows.get("gpu_metrics", 0)


def built_config(engine: Engine) -> dict[str, object] | None:
    """The configuration of the demo already in this database, if one was built."""
    cur = engine.cursor()
    try:
        found = cur.sql("SELECT value FROM wanka.settings WHERE key = 'demo_config'").fetchall()
    finally:
        cur.close()
    return json.loads(found[0][0]) if found else None


def build_demo(
    engine: Engine,
    config: SimConfig,
    *,
    rebuild: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> DemoSummary:
    """Simulate the cluster and load it in one transaction; skip when the same demo is there."""
    wanted = config.to_json()
    if not rebuild and built_config(engine) == wanted:
        return DemoSummary(wanted, _row_counts(engine), 0.0, rebuilt=False)
    started = time.perf_counter()
    cluster = simulate_cluster(config)
    summary = DemoSummary(wanted)
    with engine.transaction() as cur:
        for table in DEMO_TABLES:
            cur.execute(f'DELETE FROM "{table}"')
        for table in DEMO_TABLES[:-1]:
            summary.rows[table] = engine.insert_arrow(cur, table, getattr(cluster, table))
        samples = 0
        for batch in cluster.telemetry_batches():
            samples += engine.insert_arrow(cur, "gpu_metrics", batch)
            if progress:
                progress(batch.num_rows, cluster.sample_count)
        summary.rows["gpu_metrics"] = samples
        cur.execute(
            "INSERT OR REPLACE INTO wanka.settings VALUES ('demo_config', ?, now())",
            [json.dumps(wanted, sort_keys=True)],
        )
    summary.seconds = time.perf_counter() - started
    return summary


def _row_counts(engine: Engine) -> dict[str, int]:
    cur = engine.cursor()
    try:
        return {
            t: int(cur.sql(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]) for t in DEMO_TABLES
        }
    finally:
        cur.close()
