"""DuckDB vs Spark (local, 1 and 2 cores) on the same 10M-row lake, and the cluster it implies.

A temporary warehouse gets ~10M gpu_metrics rows (1,250 hosts × 8 GPUs × 5 DCGM fields, one
scrape every 50 minutes: a week, 7 day partitions) plus the inventory and the shipped dynamic
tables, and is exported with
`wanka export` to a Delta lake. On that lake it times, warm (best of 2, after one run that
pays Spark's code generation), the three telemetry dynamic tables' defining queries:

- DuckDB over the lake (Arrow datasets of the Delta log's active files),
- Spark `local[1]` and `local[2]` over the same files (translated SQL, the same UDFs),

then appends 1 % more rows (the next scrapes), exports them (one Delta commit) and refreshes
the dynamic tables on Spark by time windows, against recomputing them whole.

Per-core throughput (rows per second per core of the hourly rollup on Spark) gives the estimate
printed at the end: the cores a Spark cluster needs for 10,000 GPUs at 1 s and 10 s resolution.

    .venv/bin/python bench/bench_spark.py [--rows 10000000] [--fields 10]

The window refresh reads the files of the days its buckets fall in: its gain over a full
recompute grows with the days the lake holds (here 7; a real lake holds months).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warehouse.dynamic.shipped import install_shipped
from warehouse.engines.base import LakeEngine
from warehouse.engines.duck import DuckLakeEngine
from warehouse.engines.refresh import refresh_lake
from warehouse.engines.spark import SparkEngine, spark_session
from warehouse.kernel.engine import Engine
from warehouse.lake.export import export_lake
from warehouse.lake.layout import read_definitions
from warehouse.query.executor import execute

HOSTS, GPUS, FIELDS = 1250, 8, 5
METRICS = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_XID_ERRORS",
)
TELEMETRY = ("gpu_hourly_host", "xid_errors_by_model", "energy_cluster_daily")


def fill(engine: Engine, rows: int, offset_scrapes: int = 0, interval_s: int = 3000) -> int:
    """Insert `rows` synthetic samples (whole scrapes) after `offset_scrapes` scrapes."""
    per_scrape = HOSTS * GPUS * FIELDS
    scrapes = max(1, rows // per_scrape)
    cur = engine.cursor()
    metrics = "['" + "', '".join(METRICS) + "']"
    execute(
        cur,
        f"""
        INSERT INTO gpu_metrics (ts, host, gpu, uuid, model, metric, value)
        SELECT TIMESTAMPTZ '2026-11-01 00:00:00+00'
                   + to_seconds((i // {per_scrape} + {offset_scrapes}) * {interval_s}),
               'h' || lpad(CAST((i // {GPUS * FIELDS}) % {HOSTS} AS VARCHAR), 4, '0'),
               CAST((i // {FIELDS}) % {GPUS} AS INTEGER),
               'GPU-' || CAST((i // {FIELDS}) % {HOSTS * GPUS} AS VARCHAR),
               CASE WHEN (i // {GPUS * FIELDS}) % {HOSTS} < 625 THEN 'H100' ELSE 'A100' END,
               {metrics}[i % {FIELDS} + 1],
               CASE i % {FIELDS} WHEN 4 THEN CASE WHEN hash(i) % 5000 = 0 THEN 79 ELSE 0 END
                    ELSE (hash(i) % 1000) / 10.0 END
        FROM range({scrapes * per_scrape}) AS t(i)
        """,
    ).read_all()
    if offset_scrapes == 0:
        cur.execute(
            f"""
            INSERT INTO nodes (host, cluster, site, gpu_model, gpus)
            SELECT 'h' || lpad(CAST(i AS VARCHAR), 4, '0'), 'c' || CAST(i // 250 AS VARCHAR),
                   's0', CASE WHEN i < 625 THEN 'H100' ELSE 'A100' END, {GPUS}
            FROM range({HOSTS}) AS t(i)
            """
        )
    cur.close()
    return scrapes * per_scrape


def best_of(runs: int, work: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def time_queries(engine: LakeEngine, queries: dict[str, str]) -> dict[str, float]:
    for query in queries.values():
        engine.sql(query)  # warm-up: Spark generates code, DuckDB reads metadata
    return {name: best_of(2, lambda q=q: engine.sql(q)) for name, q in queries.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--fields", type=int, default=10, help="DCGM fields per GPU scraped")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wanka-bench-spark-") as tmp:
        folder = Path(tmp)
        lake = folder / "lake"
        with Engine(str(folder / "w.duckdb")) as engine:
            started = time.perf_counter()
            rows = fill(engine, args.rows)
            install_shipped(engine)
            built = time.perf_counter() - started
            started = time.perf_counter()
            export_lake(engine, lake)
            exported = time.perf_counter() - started
        queries = {d.name: d.query for d in read_definitions(lake) if d.name in TELEMETRY}
        print(
            f"lake: {rows:,} gpu_metrics rows; built in {built:.1f} s, exported in {exported:.1f} s"
        )

        duck = DuckLakeEngine()
        duck.register_lake(lake)
        duck.register_udfs()
        results = {"duckdb": time_queries(duck, queries)}
        duck.close()
        sessions = {}
        for cores in (1, 2):
            session = spark_session(
                f"local[{cores}]", config={"spark.sql.shuffle.partitions": str(2 * cores)}
            )
            spark = SparkEngine(session)
            spark.register_lake(lake)
            spark.register_udfs()
            results[f"spark local[{cores}]"] = time_queries(spark, queries)
            if cores == 2:
                sessions["spark"] = spark
            else:
                session.stop()

        print("\n| query | " + " | ".join(results) + " | spark 1→2 cores |")
        print("|---|" + "---|" * (len(results) + 1))
        for name in queries:
            one, two = results["spark local[1]"][name], results["spark local[2]"][name]
            cells = " | ".join(f"{results[e][name]:.2f} s" for e in results)
            print(f"| {name} | {cells} | {one / two:.2f}× |")

        # incremental on Spark: 1 % more rows, one export commit, window refresh vs whole
        spark = sessions["spark"]
        refresh_lake(spark, lake)  # the lake's tables as Spark computes them
        with Engine(str(folder / "w.duckdb")) as engine:
            scrapes = rows // (HOSTS * GPUS * FIELDS)
            appended = fill(engine, rows // 100, offset_scrapes=scrapes)
            started = time.perf_counter()
            export_lake(engine, lake)
            append_s = time.perf_counter() - started
        started = time.perf_counter()
        done = refresh_lake(spark, lake)
        window_s = time.perf_counter() - started
        started = time.perf_counter()
        refresh_lake(spark, lake, full=True)
        full_s = time.perf_counter() - started
        modes = ", ".join(f"{d.name} {d.mode}" for d in done if d.name in TELEMETRY)
        print(
            f"\nappend {appended:,} rows ({100 * appended / rows:.0f} %): "
            f"export {append_s:.2f} s; refresh on Spark local[2] {window_s:.2f} s ({modes}) "
            f"vs full {full_s:.2f} s: {full_s / window_s:.1f}×"
        )
        estimate(rows, results, args.fields)


def estimate(rows: int, results: dict[str, dict[str, float]], fields: int) -> None:
    """The cluster a 10,000-GPU fleet needs, from the measured per-core throughput."""
    per_core = {
        cores: rows / results[f"spark local[{cores}]"]["gpu_hourly_host"] / cores
        for cores in (1, 2)
    }
    print(
        "\nper-core throughput (hourly rollup on Spark): "
        + ", ".join(f"local[{c}] {r / 1e6:.2f}M rows/s per core" for c, r in per_core.items())
    )
    print(
        "\n| resolution | rows/s | rows/day | per-core rate | keep-up cores | "
        "cores to scan a day in 60 s | 16-core nodes |"
    )
    print("|---|---|---|---|---|---|---|")
    for resolution_s in (1, 10):
        rows_s = 10_000 * fields / resolution_s
        day = rows_s * 86_400
        for cores, rate in per_core.items():
            # a refresh every 5 minutes recomputes the current hour's buckets of 3 rollups:
            # up to 3 hours of rows read within the 5 minutes
            keep_up = math.ceil(3 * rows_s * 3_600 / 300 / rate)
            scan = math.ceil(day / 60 / rate)
            nodes = math.ceil(max(keep_up, scan) / 16)
            print(
                f"| {resolution_s} s | {rows_s:,.0f} | {day / 1e9:.2f}B | "
                f"{rate / 1e6:.2f}M (local[{cores}]) | {keep_up} | {scan} | {nodes} |"
            )
    print(
        f"\n(10,000 GPUs × {fields} DCGM fields. Keep-up: the incremental refreshes alone; "
        "scan: an ad-hoc query over a whole day answering in a minute. Plan with the lower "
        "rate: cores share memory bandwidth, and on a shared machine each other's time. Add "
        "headroom for skew, shuffles and concurrent queries.)"
    )


if __name__ == "__main__":
    main()
