"""The demo warehouse: a simulated 10,000-GPU cluster loaded into one database file."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from warehouse.dynamic.shipped import install_shipped
from warehouse.ingest import ReadOptions, ingest
from warehouse.kernel.engine import Engine
from warehouse.kernel.tables import DEMO
from warehouse.simulate import SimConfig, simulate_cluster, write_formats
from warehouse.tsdb import tiers, write

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
WITH links AS (
  SELECT n.cluster, n.nic_model, n.pcie_gen, n.host,
         nic_gbs(k.line_rate_gbps) AS nic_gbs,
         nic_effective_gbs(k.line_rate_gbps, n.pcie_gen, n.pcie_lanes) AS effective_gbs,
         nic_bottleneck(k.line_rate_gbps, n.pcie_gen, n.pcie_lanes) AS bottleneck
  FROM nodes n JOIN nic_models k ON k.model = n.nic_model)
SELECT cluster, nic_model, pcie_gen, bottleneck, count(*) AS hosts, any_value(nic_gbs) AS nic_gbs,
       round(any_value(effective_gbs), 2) AS effective_gbs
FROM links GROUP BY ALL ORDER BY any_value(effective_gbs / nic_gbs), hosts DESC LIMIT 10""",
}


@dataclass(frozen=True)
class Step:
    """One ingest the demo runs: a format, files relative to a folder, and options."""

    format: str
    paths: tuple[str, ...]
    options: ReadOptions = field(default_factory=ReadOptions)
    optional: bool = False  # written only by some simulations (nccl probes)


#: How the demo loads its simulated cluster: through the same readers `wanka ingest` uses. The
#: Slurm jobs go in as real sacct text last, so the real-format path is what the tables hold;
#: the Parquet copies carry the Kubernetes jobs, which sacct does not list.
SIMULATED_STEPS = (
    Step("inventory", ("inventory/sites.csv",), ReadOptions(table="sites")),
    Step("inventory", ("inventory/clusters.csv",), ReadOptions(table="clusters")),
    Step("inventory", ("inventory/nodes.csv",)),
    Step("parquet", ("parquet/jobs.parquet",), ReadOptions(table="jobs")),
    Step("parquet", ("parquet/job_steps.parquet",), ReadOptions(table="job_steps")),
    Step("parquet", ("parquet/job_events.parquet",), ReadOptions(table="job_events")),
    Step("sacct", ("slurm/sacct.txt",)),
    Step("parquet", ("parquet/gpu_metrics",), ReadOptions(table="gpu_metrics")),
    Step("parquet", ("parquet/nccl_results.parquet",), ReadOptions(table="nccl_results"), True),
)

#: The real public samples the demo adds when ../shared/data is there, each kept apart from the
#: simulated cluster by its own cluster or host names.
REAL_STEPS = (
    Step("nvidia-smi", ("nvidia-smi",)),
    Step("sacct", ("slurm/sacct-output-v2.txt",), ReadOptions(cluster="aws-hpc-sample")),
    Step(
        "pods",
        ("alibaba/openb_pod_list_default.csv",),
        ReadOptions(cluster="alibaba-openb", trace_start=datetime(2023, 1, 1, tzinfo=UTC)),
    ),
    Step("philly", ("philly/philly_jobs_adaptdl.csv",), ReadOptions(cluster="philly")),
    Step("alibaba-duty-cycle", ("alibaba/pod_gpu_duty_cycle_anon.csv",)),
    Step("alibaba-model-load", ("alibaba/basemodel_update_latency_anon.csv",)),
)


@dataclass
class DemoSummary:
    """What a demo build produced, for the person who ran it."""

    config: dict[str, object]
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    rebuilt: bool = True
    batches: int = 0
    real_samples: str | None = None  # where the real samples came from, if they were found

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
    real_data: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DemoSummary:
    """Simulate the cluster, write it in the real formats and ingest those files.

    The same demo already built is left alone unless `rebuild`. Each file is one ingest batch;
    the marker that says the demo is complete is written last, so an interrupted build is
    rebuilt on the next run.
    """
    wanted = config.to_json()
    if not rebuild and built_config(engine) == wanted:
        return DemoSummary(wanted, _row_counts(engine), 0.0, rebuilt=False)
    started = time.perf_counter()
    cluster = simulate_cluster(config)
    summary = DemoSummary(wanted)
    with engine.transaction() as cur:
        cur.execute("DELETE FROM wanka.settings WHERE key = 'demo_config'")
        for table in DEMO:
            write.clear(cur, table)
    total = cluster.sample_count
    with tempfile.TemporaryDirectory(prefix="wanka-demo-") as folder:
        write_formats(cluster, Path(folder), kinds=("inventory", "slurm", "parquet"))
        steps = [
            (Path(folder), step)
            for step in SIMULATED_STEPS
            if not step.optional or all((Path(folder) / p).exists() for p in step.paths)
        ]
        if real_data is not None and (real_data / "MANIFEST.md").is_file():
            steps += [(real_data, step) for step in REAL_STEPS]
            summary.real_samples = str(real_data)
        for root, step in steps:

            def advance(n: int, step: Step = step) -> None:
                if progress and step.format == "parquet" and step.options.table == "gpu_metrics":
                    progress(n, total)

            results = ingest(
                engine,
                step.format,
                [str(root / p) for p in step.paths],
                step.options,
                force=True,
                progress=advance,
            )
            summary.batches += len(results)
    with engine.transaction() as cur:
        cur.execute(
            "INSERT OR REPLACE INTO wanka.settings VALUES ('demo_config', ?, now())",
            [json.dumps(wanted, sort_keys=True)],
        )
    install_shipped(engine, refresh_existing=True)  # the shipped dynamic tables, fresh
    cur = engine.cursor()
    tiers.fold(cur)  # and the downsampling tiers
    cur.close()
    summary.rows = _row_counts(engine)
    summary.seconds = time.perf_counter() - started
    return summary


def _row_counts(engine: Engine) -> dict[str, int]:
    cur = engine.cursor()
    try:
        return {t: int(cur.sql(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]) for t in DEMO}
    finally:
        cur.close()
