"""Per-job GPU attribution at the cluster's size: is it right, and how fast does it answer?

For each way telemetry can name jobs (`--modes`: hpc = dcgm-exporter's `hpc_job` label on the
Slurm partitions and pod labels on the Kubernetes ones; kubernetes = pod labels only; none = no
job labels, only whole-node information from the job log), a simulated cluster is loaded into
a fresh warehouse (the eager tables, then the telemetry scrape by scrape while the simulator's
own per-job sums are kept: the ground truth), the shipped per-job dynamic tables are created
(a full refresh, timed) and compared with the truth:

- coverage: the share of the truth's GPU-utilisation samples of its jobs that are attributed to
  the right job (target ≥ 99 % where labels name the jobs);
- per-job mean utilisation against the truth's: the largest difference and the jobs off by more
  than 0.5 percentage points (target: none);
- with no labels, exclusive jobs exact and the others flagged `ambiguous`, never guessed.

Then the waste analyses (idle_gpu_jobs, gpu_efficiency) and `wanka jobstats` are timed over the
first mode's warehouse (medians; targets ≤ 2 s and ≤ 200 ms).

    .venv/bin/python bench/bench_jobs.py [--gpus 10000] [--hours 6] [--modes hpc,kubernetes,none]
        [--small-gpus 1000] [--small-hours 6]

The first mode runs at --gpus/--hours (by default 6 hours of 10,000 GPUs at 60 s: 57M samples;
`--hours 24` is the day, 230M samples, about four times the build), the others at
--small-gpus/--small-hours. The analyses and jobstats read the per-job tables, whose size
follows jobs and GPUs, not samples.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warehouse.analyses import run_analysis_table
from warehouse.jobs import attribution, stats
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.simulate.truth import JobUsage, truth_job_ids
from warehouse.tsdb.append import append

ROOT = Path(__file__).resolve().parents[1]
JOB_TABLES = ("job_gpu_usage_daily", "job_gpu_usage_by_gpu", "job_gpu_usage")

COMPARE = """
WITH ours AS (SELECT job_id, sum(samples) AS samples FROM job_gpu_usage_by_gpu GROUP BY job_id)
SELECT count(*) AS jobs,
       sum(t.samples) AS truth_samples,
       sum(least(coalesce(o.samples, 0), t.samples)) AS attributed,
       max(abs(u.util_pct - t.util_pct)) AS worst_pp,
       count(*) FILTER (WHERE u.util_pct IS NULL OR abs(u.util_pct - t.util_pct) > 0.5) AS off,
       count(*) FILTER (WHERE u.util_pct IS NULL) AS unattributed
FROM truth t LEFT JOIN ours o USING (job_id) LEFT JOIN job_gpu_usage u USING (job_id)
WHERE {where}
"""


def load(engine: Engine, cfg: SimConfig) -> tuple[pa.Table, dict[str, float]]:
    """The cluster into `engine`; the truth per job and the seconds each part took."""
    took: dict[str, float] = {}
    began = time.perf_counter()
    cluster = simulate_cluster(cfg)
    tables = cluster.tables()
    took["simulate"] = time.perf_counter() - began
    cur = engine.cursor()
    for name, table in tables.items():
        engine.insert_arrow(cur, name, table)
    usage = JobUsage(cluster.telemetry)
    began, samples = time.perf_counter(), 0
    for batch in cluster.telemetry_batches(observe=usage.observe):
        batch_id = int(cur.execute("SELECT nextval('wanka.batch_seq')").fetchall()[0][0])
        rows = pa.Table.from_batches([batch])
        rows = rows.append_column("batch_id", pa.array(np.full(rows.num_rows, batch_id)))
        samples += append(cur, rows).gpu
    took["ingest"] = time.perf_counter() - began
    took["samples"] = samples
    cur.execute("CHECKPOINT")
    began = time.perf_counter()
    attribution.sync_if_needed(cur)
    for name in JOB_TABLES:
        execute(cur, (ROOT / f"sql/dynamic/{name}.sql").read_text()).read_all()
    took["create"] = time.perf_counter() - began
    cur.close()
    truth = usage.table(truth_job_ids(tables["jobs"], tables["clusters"]))
    return truth, took


AMBIGUOUS = "SELECT DISTINCT job_id FROM job_gpus WHERE NOT exact"
POD = "job_id LIKE '%/%'"
EXACT = f"job_id NOT IN ({AMBIGUOUS})"
FLAGGED = f"job_id IN ({AMBIGUOUS})"

#: Per mode, the jobs compared: (label, SQL condition on job_id, whether all must be exact).
CASES = {
    "hpc": [
        ("Slurm jobs, by hpc_job", f"NOT {POD}", True),
        ("pods, by pod labels", POD, True),
    ],
    "kubernetes": [
        ("pods, by pod labels", POD, True),
        ("Slurm jobs on whole nodes", f"NOT {POD} AND {EXACT}", True),
        ("Slurm jobs sharing nodes", f"NOT {POD} AND {FLAGGED}", False),
    ],
    "none": [
        ("jobs on whole nodes", EXACT, True),
        ("jobs sharing nodes", FLAGGED, False),
    ],
}


def compare(engine: Engine, truth: pa.Table, mode: str) -> list[str]:
    cur = engine.cursor()
    cur.register("truth", truth)
    lines = []
    for label, where, exact in CASES[mode]:
        jobs, truth_n, attributed, worst, off, _unattributed = cur.execute(
            COMPARE.format(where=where)
        ).fetchall()[0]
        if not jobs:
            continue
        coverage = 100 * (attributed or 0) / truth_n if truth_n else 0.0
        worst_text = "–" if worst is None else f"{worst:.4f}"
        verdict = (
            ("yes" if coverage >= 99 and off == 0 else "NO")
            if exact
            else f"flagged ambiguous, none guessed: {'yes' if attributed == 0 else 'NO'}"
        )
        lines.append(
            f"| {mode} | {label} | {jobs:,} | {coverage:.2f} % | {worst_text} | {off:,} "
            f"| {verdict} |"
        )
    cur.unregister("truth")
    cur.close()
    return lines


def timings(engine: Engine, repeats: int = 5) -> list[str]:
    """The waste analyses and jobstats, medians."""
    cur = engine.cursor()
    lines = []
    for name in ("idle_gpu_jobs", "gpu_efficiency"):
        try:
            spent = []
            for _ in range(repeats):
                began = time.perf_counter()
                rows = run_analysis_table(cur, name).num_rows
                spent.append(time.perf_counter() - began)
        except Exception as error:  # an analysis this checkout lacks: say so, go on
            lines.append(f"| analysis {name} | – | not run: {str(error).splitlines()[0]} | – |")
            continue
        median = statistics.median(spent)
        lines.append(
            f"| analysis {name} | {rows:,} rows | {median:.3f} s "
            f"| {'yes' if median <= 2 else 'NO'} (≤ 2 s) |"
        )
    ids = [
        r[0]
        for r in cur.execute(
            "SELECT job_id FROM job_gpu_usage ORDER BY gpus_seen DESC, job_id LIMIT 20"
        ).fetchall()
    ]
    spent = []
    for job_id in ids:
        began = time.perf_counter()
        stats.render(stats.stats(cur, job_id))
        spent.append(time.perf_counter() - began)
    median = statistics.median(spent)
    lines.append(
        f"| wanka jobstats (report of the {len(ids)} largest jobs) | – | {median * 1000:.0f} ms "
        f"(max {max(spent) * 1000:.0f}) | {'yes' if median <= 0.2 else 'NO'} (≤ 200 ms) |"
    )
    cur.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=6)
    parser.add_argument("--modes", default="hpc,kubernetes,none")
    parser.add_argument("--small-gpus", type=int, default=1_000)
    parser.add_argument("--small-hours", type=float, default=6)
    args = parser.parse_args()
    modes = args.modes.split(",")
    accuracy, loads, speed = [], [], []
    for i, mode in enumerate(modes):
        gpus, hours = (args.gpus, args.hours) if i == 0 else (args.small_gpus, args.small_hours)
        cfg = SimConfig(gpus=gpus, hours=hours, interval_s=60, job_labels=mode)
        with tempfile.TemporaryDirectory() as tmp, Engine(str(Path(tmp) / "j.duckdb")) as eng:
            truth, took = load(eng, cfg)
            loads.append(
                f"| {mode} | {gpus:,} GPUs · {hours:g} h · 60 s | {int(took['samples']):,} "
                f"| {took['simulate']:.0f} | {took['ingest']:.0f} | {took['create']:.1f} |"
            )
            accuracy += compare(eng, truth, mode)
            if i == 0:
                speed = timings(eng)
            print(loads[-1], file=sys.stderr, flush=True)
    print(
        "| labels | cluster | samples | simulate s | ingest s "
        "| per-job tables created (full refresh) s |"
    )
    print("|---|---|---:|---:|---:|---:|")
    print("\n".join(loads))
    print()
    print(
        "| labels | jobs | count | GPU samples attributed | worst |util − truth| pp "
        "| jobs off > 0.5 pp | ≥ 99 % and none off |"
    )
    print("|---|---|---:|---:|---:|---:|---|")
    print("\n".join(accuracy))
    print()
    print(f"over the {modes[0]} warehouse ({args.gpus:,} GPUs, {args.hours:g} h):")
    print()
    print("| query | result | median | target |")
    print("|---|---|---:|---|")
    print("\n".join(speed))


if __name__ == "__main__":
    main()
