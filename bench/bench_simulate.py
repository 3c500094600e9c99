"""Simulator throughput on one core: telemetry generation vs the 2M samples/s target, and writers.

Run: `.venv/bin/python bench/bench_simulate.py [--quick]`. Every thread pool is pinned to one
thread before numpy, polars and pyarrow load, so the numbers are single-core. Each timing is
the median of three runs; the writer table times each format over the same in-memory batches.
"""

from __future__ import annotations

import os

for _var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from warehouse.simulate import SimConfig, SimulatedCluster, simulate_cluster  # noqa: E402
from warehouse.simulate.formats import csv_ready  # noqa: E402
from warehouse.simulate.prom import PromWriter  # noqa: E402
from warehouse.simulate.sacct import write_sacct  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

TARGET_PER_S = 2_000_000
REPEATS = 3


def median_seconds(run: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def drain(cluster: SimulatedCluster) -> int:
    return sum(batch.num_rows for batch in cluster.telemetry_batches())


def generation_table(configs: list[tuple[str, SimConfig]]) -> list[str]:
    rows = [
        "| config | samples | build s | telemetry s (median of 3) | samples/s | vs 2M/s target |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, cfg in configs:
        began = time.perf_counter()
        cluster = simulate_cluster(cfg)
        build = time.perf_counter() - began
        seconds = median_seconds(lambda c=cluster: drain(c))
        rate = cluster.sample_count / seconds
        rows.append(
            f"| {label} | {cluster.sample_count:,} | {build:.2f} | {seconds:.2f} | "
            f"{rate / 1e6:.1f} M | {rate / TARGET_PER_S:.1f}× |"
        )
    return rows


def writer_table(label: str, cfg: SimConfig) -> list[str]:
    cluster = simulate_cluster(cfg)
    batches = list(cluster.telemetry_batches())
    samples = cluster.sample_count
    rows = [
        f"| format ({label}) | rows | MB written | seconds (median of 3) | MB/s | rows/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        prom = PromWriter(cluster.telemetry)

        def write_prom() -> None:
            for i, batch in enumerate(batches):
                with (out / f"m-{i}.prom").open("wb") as handle:
                    prom.write(batch, handle)

        def write_parquet() -> None:
            for i, batch in enumerate(batches):
                pq.write_table(pa.Table.from_batches([batch]), out / f"part-{i}.parquet")

        def write_sacct_file() -> None:
            write_sacct(
                cluster.jobs, cluster.job_steps, cluster.nodes, cluster.clusters, out / "sacct"
            )

        def write_csvs() -> None:
            for name in ("sites", "clusters", "nodes"):
                pacsv.write_csv(csv_ready(cluster.tables()[name]), out / f"{name}.csv")

        def write_tables() -> None:
            for name, table in cluster.tables().items():
                pq.write_table(table, out / f"{name}.parquet")

        job_rows = cluster.jobs.num_rows + cluster.job_steps.num_rows
        inventory_rows = sum(cluster.tables()[n].num_rows for n in ("sites", "clusters", "nodes"))
        table_rows = sum(t.num_rows for t in cluster.tables().values())
        for name, run, pattern, count in (
            ("dcgm .prom text", write_prom, "m-*.prom", samples),
            ("gpu_metrics Parquet", write_parquet, "part-*.parquet", samples),
            ("sacct --parsable2", write_sacct_file, "sacct", job_rows),
            ("inventory CSV", write_csvs, "*.csv", inventory_rows),
            ("table Parquet", write_tables, "[!p]*.parquet", table_rows),
        ):
            seconds = median_seconds(run)
            size = sum(p.stat().st_size for p in out.glob(pattern)) / 1e6
            rows.append(
                f"| {name} | {count:,} | {size:,.1f} | {seconds:.2f} | {size / seconds:,.0f} | "
                f"{count / seconds / 1e6:.2f} M |"
            )
    return rows


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    gpus = 1_000 if quick else 10_000
    configs = [
        (f"{gpus:,} GPUs, 1 h, 60 s", SimConfig(gpus=gpus, hours=1.0, interval_s=60.0)),
        (f"{gpus:,} GPUs, 1 h, 10 s", SimConfig(gpus=gpus, hours=1.0, interval_s=10.0)),
    ]
    print("Telemetry generation, one core (POLARS_MAX_THREADS=1 OMP_NUM_THREADS=1 ...)\n")
    print("\n".join(generation_table(configs)))
    print("\nwrite_formats by format, one core\n")
    print("\n".join(writer_table(configs[0][0], configs[0][1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
