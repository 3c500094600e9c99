"""sacct ingest throughput on one core, end to end: file → reader → DuckDB, one batch.

Writes a realistic `sacct --parsable2` dump (header; jobs of every state, array tasks, pending
jobs, multi-node host lists, typed and untyped GPU TRES, `CANCELLED by N`, day-long elapsed
times; each started job with batch, extern and one or two srun steps), then ingests it into a
fresh database three times and reports the median against the 200,000 jobs/s target; then the
same jobs as `sacct -X` prints them (allocations only, no steps).

    .venv/bin/python bench/bench_ingest_sacct.py [--jobs 500000]
"""

from __future__ import annotations

import os

# One core: set before polars and DuckDB start their thread pools.
os.environ["POLARS_MAX_THREADS"] = "1"

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warehouse.ingest import sacct  # noqa: F401  (registers the reader)
from warehouse.ingest.base import FORMATS, ReadOptions, Source
from warehouse.ingest.batch import ingest_source, read_context
from warehouse.kernel.engine import Engine

TARGET_JOBS_PER_S = 200_000
FIELDS = (
    "JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|State|"
    "ExitCode|DerivedExitCode|AllocNodes|AllocCPUS|AllocTRES|NodeList"
)
STATES = np.array(
    ["COMPLETED", "FAILED", "CANCELLED by 10231", "TIMEOUT", "OUT_OF_MEMORY", "RUNNING",
     "PENDING", "NODE_FAIL"]
)  # fmt: skip
STATE_P = [0.55, 0.12, 0.08, 0.04, 0.03, 0.08, 0.08, 0.02]


def _iso(seconds: pl.Expr) -> pl.Expr:
    return pl.from_epoch(seconds, time_unit="s").dt.strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: pl.Expr) -> pl.Expr:
    days = seconds // 86400
    rest = seconds % 86400
    hms = pl.format(
        "{}:{}:{}",
        (rest // 3600).cast(pl.String).str.zfill(2),
        (rest % 3600 // 60).cast(pl.String).str.zfill(2),
        (rest % 60).cast(pl.String).str.zfill(2),
    )
    return pl.when(days > 0).then(pl.format("{}-{}", days, hms)).otherwise(hms)


def write_dump(path: Path, jobs: int, *, steps: bool = True, seed: int = 7) -> int:
    """Write `jobs` jobs, with their steps unless `steps` is off (`sacct -X`); returns lines."""
    rng = np.random.default_rng(seed)
    state = rng.choice(STATES, jobs, p=STATE_P)
    nodes = rng.choice([1, 1, 1, 2, 4, 8, 16, 32], jobs)
    array = rng.random(jobs) < 0.1
    base = 4_000_000 + np.arange(jobs)
    frame = pl.DataFrame(
        {
            "n": np.arange(jobs),
            "id": np.where(array, [f"{b}_{b % 50}" for b in base], base.astype(str)),
            "state": state,
            "nodes": nodes,
            "first": rng.integers(1, 1200, jobs),
            "submit": 1_790_000_000 + np.arange(jobs) * 3 + rng.integers(0, 3, jobs),
            "wait": rng.integers(0, 3600, jobs),
            "run": rng.integers(30, 3 * 86400, jobs),
            "gpus": rng.choice([1, 2, 4, 8], jobs, p=[0.1, 0.1, 0.2, 0.6]),
            "typed": rng.random(jobs) < 0.5,
            "user": rng.integers(0, 400, jobs),
            "steps": rng.integers(1, 3, jobs),
        }
    )
    pending = pl.col("state") == "PENDING"
    running = pl.col("state") == "RUNNING"
    gpus = pl.when(pl.col("nodes") > 1).then(8).otherwise(pl.col("gpus"))
    last = pl.col("first") + pl.col("nodes") - 1
    hosts = (
        pl.when(pl.col("nodes") == 1)
        .then(pl.format("gpu{}", pl.col("first").cast(pl.String).str.zfill(4)))
        .otherwise(
            pl.format(
                "gpu[{}-{}]",
                pl.col("first").cast(pl.String).str.zfill(4),
                last.cast(pl.String).str.zfill(4),
            )
        )
    )
    tres = pl.format(
        "billing={},cpu={},{}={},mem={}G,node={}",
        gpus * 16 * pl.col("nodes"),
        gpus * 16 * pl.col("nodes"),
        pl.when(pl.col("typed")).then(pl.lit("gres/gpu:h100")).otherwise(pl.lit("gres/gpu")),
        gpus * pl.col("nodes"),
        gpus * 128 * pl.col("nodes"),
        pl.col("nodes"),
    )
    start = pl.col("submit") + pl.col("wait")
    frame = frame.with_columns(
        submit_s=_iso(pl.col("submit")),
        start_s=pl.when(pending).then(pl.lit("Unknown")).otherwise(_iso(start)),
        end_s=pl.when(pending | running)
        .then(pl.lit("Unknown"))
        .otherwise(_iso(start + pl.col("run"))),
        elapsed_s=pl.when(pending).then(pl.lit("00:00:00")).otherwise(_elapsed(pl.col("run"))),
        exit=pl.when(pl.col("state") == "FAILED").then(pl.lit("1:0")).otherwise(pl.lit("0:0")),
        alloc_nodes=pl.when(pending).then(0).otherwise(pl.col("nodes")).cast(pl.String),
        cpus=pl.when(pending).then(0).otherwise(gpus * 16 * pl.col("nodes")).cast(pl.String),
        tres=pl.when(pending).then(pl.lit("")).otherwise(tres),
        hosts=pl.when(pending).then(pl.lit("None assigned")).otherwise(hosts),
        # The batch script runs on the first node of the allocation only.
        first_host=pl.format("gpu{}", pl.col("first").cast(pl.String).str.zfill(4)),
        user_s=pl.format("user{}", pl.col("user")),
        account=pl.format("team{}", pl.col("user") % 23),
    )
    job_line = pl.concat_str(
        [
            "id", "id", pl.lit("train"), "user_s", "account", pl.lit("h100"), pl.lit("normal"),
            "submit_s", "submit_s", "start_s", "end_s", "elapsed_s", "state", "exit", pl.lit("0:0"),
            "alloc_nodes", "cpus", "tres", "hosts",
        ],
        separator="|",
    )  # fmt: skip

    def step(name: str, step_id: str, hosts: str = "hosts") -> pl.Expr:
        step_text = pl.format("{}.{}", "id", pl.lit(step_id))
        return pl.concat_str(
            [
                step_text, step_text, pl.lit(name), pl.lit(""), "account", pl.lit(""), pl.lit(""),
                "start_s", "start_s", "start_s", "end_s", "elapsed_s", "state", "exit", pl.lit(""),
                "alloc_nodes", "cpus", "tres", hosts,
            ],
            separator="|",
        )  # fmt: skip

    started = ~pending & pl.lit(steps)
    lines = (
        frame.select(
            pl.col("n"),
            pl.concat_list(
                job_line,
                pl.when(started).then(step("batch", "batch", "first_host")),
                pl.when(started).then(step("extern", "extern")),
                pl.when(started).then(step("torchrun", "0")),
                pl.when(started & (pl.col("steps") > 1)).then(step("eval", "1")),
            ).alias("line"),
        )
        .explode("line")
        .drop_nulls("line")
    )
    with path.open("w", encoding="utf-8") as handle:
        handle.write(FIELDS + "\n")
        handle.write("\n".join(lines.get_column("line").to_list()))
        handle.write("\n")
    return lines.height + 1


def ingest_once(path: Path, folder: Path, run: int) -> tuple[float, float, int, int]:
    """Wall and CPU seconds of one ingest into a fresh database; jobs and steps stored."""
    engine = Engine(str(folder / f"bench-{run}.duckdb"))
    try:
        engine.con.execute("SET threads = 1")
        context = read_context(engine)
        cpu, started = time.process_time(), time.perf_counter()
        result = ingest_source(
            engine, FORMATS["sacct"], Source(str(path), path), ReadOptions(), context
        )
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        engine.close()
    return seconds, cpu, result.rows.get("jobs", 0), result.rows.get("job_steps", 0)


def measure(folder: Path, jobs: int, runs: int, *, steps: bool) -> dict[str, float]:
    path = folder / ("sacct.txt" if steps else "sacct-X.txt")
    lines = write_dump(path, jobs, steps=steps)
    size_mb = path.stat().st_size / 1e6
    timings, cpus, read_jobs, read_steps = [], [], 0, 0
    for run in range(runs):
        seconds, cpu, read_jobs, read_steps = ingest_once(path, folder, run)
        timings.append(seconds)
        cpus.append(cpu)
        (folder / f"bench-{run}.duckdb").unlink()
    path.unlink()
    print(
        f"{'sacct' if steps else 'sacct -X'}: {lines:,} lines ({size_mb:.0f} MB), "
        f"{read_jobs:,} jobs + {read_steps:,} steps; runs "
        + ", ".join(f"{t:.2f} s ({c:.2f} s CPU)" for t, c in zip(timings, cpus, strict=True))
    )
    return {
        "jobs": read_jobs,
        "lines": lines,
        "seconds": statistics.median(timings),
        "cpu": statistics.median(cpus),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wanka-bench-") as tmp:
        results = {
            "jobs + steps (batch, extern, 1–2 srun)": measure(
                Path(tmp), args.jobs, args.runs, steps=True
            ),
            "allocations only (`sacct -X`)": measure(Path(tmp), args.jobs, args.runs, steps=False),
        }
    print()
    print(f"One core (POLARS_MAX_THREADS=1, DuckDB threads=1), median of {args.runs}; wall")
    print("time, and CPU time of the process (the fairer figure on a shared machine):")
    print()
    print("| dump | jobs | lines | seconds (CPU) | jobs/s (CPU) | lines/s | vs 200k jobs/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        rate, cpu_rate = r["jobs"] / r["seconds"], r["jobs"] / r["cpu"]
        print(
            f"| {name} | {r['jobs']:,.0f} | {r['lines']:,.0f} | {r['seconds']:.2f} "
            f"({r['cpu']:.2f}) | {rate:,.0f} ({cpu_rate:,.0f}) | {r['lines'] / r['seconds']:,.0f} "
            f"| {rate / TARGET_JOBS_PER_S:.2f}× ({cpu_rate / TARGET_JOBS_PER_S:.2f}×) |"
        )


if __name__ == "__main__":
    main()
