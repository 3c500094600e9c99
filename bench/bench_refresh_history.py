"""Does an incremental refresh cost the same however much history its source holds?

One warehouse per size (`--sizes`, rows of gpu_metrics history: 10M, 100M and 1B by default),
each with the shipped hourly per-host rollup, loaded as bench/bench_dynamic.py loads one. Then
the sizes take turns — an append of 0.1 % of an hour under a new batch id and the incremental
refresh, size after size, `--repeats` rounds after one to warm up — so every size sees the same
machine noise. It prints the median refresh per size and its ratio to the smallest (target
≤ 1.3× from 10M to 1B), beside one FULL refresh of each, and checks every refresh was
incremental and each table equals its query at the end.

    .venv/bin/python bench/bench_refresh_history.py [--sizes 1e7,1e8,1e9] [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import bench_dynamic as dyn  # bench/ is the script's folder on sys.path

from warehouse.kernel.engine import Engine


def compare(sizes: list[float], gpus: int, repeats: int, threads: int, folder: Path) -> None:
    """Incremental refresh after a 0.1 % append at each history size, measured in turns."""
    engines, appenders, held = [], [], []
    for i, size in enumerate(sizes):
        began = time.perf_counter()
        engine = Engine(str(folder / f"rows{i}.duckdb"))
        if threads:
            engine.con.execute(f"SET threads = {threads}")
        base, existing, new, rows = dyn.load(engine, gpus, int(size))
        cur = engine.cursor()
        dyn.run(cur, dyn.ROLLUP)
        cur.close()
        engines.append(engine)
        appenders.append(dyn.Appender(engine, existing, new))
        held.append(rows)
        print(f"{rows:,} rows loaded in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    append = round(base * 0.001)
    times: list[list[float]] = [[] for _ in sizes]
    ok = True
    for _ in range(repeats + 1):  # the first round warms each warehouse up and is not counted
        for i, engine in enumerate(engines):
            appenders[i].append(append)
            cur = engine.cursor()
            times[i].append(
                dyn.timed(partial(dyn.run, cur, "REFRESH DYNAMIC TABLE gpu_hourly_host"))
            )
            mode = cur.execute(
                "SELECT refresh_mode FROM wanka.refresh_history WHERE name = 'gpu_hourly_host' "
                "ORDER BY finished_at DESC LIMIT 1"
            ).fetchall()[0][0]
            ok &= mode == "incremental"
            cur.close()
    fulls = []
    for engine in engines:
        cur = engine.cursor()
        ok &= dyn.same_as_query(cur, "gpu_hourly_host", dyn.ROLLUP_SELECT)
        fulls.append(dyn.timed(partial(dyn.run, cur, "REFRESH DYNAMIC TABLE gpu_hourly_host FULL")))
        cur.close()
        engine.close()
    medians = [statistics.median(t[1:]) for t in times]
    print(
        f"incremental refresh of the hourly per-host rollup after a 0.1 % append "
        f"({append:,} rows), {gpus:,} GPUs, by rows of history; the sizes take turns, "
        f"{repeats} rounds after one to warm up"
    )
    print()
    print(
        "| rows held | incremental ms (median) | p10–p90 ms | vs smallest | full s | full / incr |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for rows, t, m, f in zip(held, times, medians, fulls, strict=True):
        deciles = statistics.quantiles(t[1:], n=10)
        print(
            f"| {rows:,} | {m * 1e3:.1f} | {deciles[0] * 1e3:.1f}–{deciles[-1] * 1e3:.1f} "
            f"| {m / medians[0]:.2f}× | {f:.2f} | {f / m:.0f}× |"
        )
    growth = medians[-1] / medians[0]
    print()
    print(
        f"growth from {held[0]:,} to {held[-1]:,} rows: {growth:.2f}× "
        f"(≤ 1.3×: {'yes' if growth <= 1.3 else 'NO'}); every refresh incremental and the table "
        f"equal to its query: {ok}"
    )
    if not ok:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e7,1e8,1e9", help="rows of history, comma-separated")
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: its default)")
    args = parser.parse_args()
    sizes = [float(x) for x in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        compare(sizes, args.gpus, args.repeats, args.threads, Path(tmp))


if __name__ == "__main__":
    main()
