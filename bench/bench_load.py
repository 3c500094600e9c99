"""Load: a real `wanka serve` under 64 HTTP and 32 pgwire clients, ingest and refreshes at once.

Builds a small demo warehouse (simulated cluster), adds a reader and a writer, shortens the
shipped dynamic tables' freshness, starts `wanka serve` (HTTP, pgwire, scheduler) and for
`--duration-s` drives it with:
- `--http-clients` threads looping small analytic queries (base tables and dynamic tables),
- `--pg-clients` psycopg 3 connections doing the same with simple queries,
- one writer POSTing a freshly simulated DCGM batch to /v1/ingest/dcgm every `--ingest-every-s`,
- the server's scheduler refreshing the dynamic tables as their freshness falls due.
One query in `PROVOKE_EVERY` is bad SQL on purpose: it must fail with a clean error (HTTP 400, a
PostgreSQL error) and the client goes on; every other error counts. Sampled every second: the
server's RSS (/proc/PID/status VmRSS) and each dynamic table's lag (now − data_timestamp).

Prints markdown tables: throughput and p50/p99 per face, ingest, refresh lag vs freshness, RSS.
The clients share this process (and its GIL) with the samplers, so on a small machine the
figures are the system's, client included.

Run: .venv/bin/python bench/bench_load.py [--duration-s 300] [--http-clients 64] [--pg-clients 32]
With `--live-feed [--gpus 10000 --interval-s 15]` it measures the remote_write feed instead:
scrape-to-queryable lag and memory (bench/live_feed.py).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from load_clients import (  # noqa: E402  (bench/ is the script's folder on sys.path)
    PASSWORD,
    PROVOKE_EVERY,
    READER,
    WRITER,
    Face,
    Ingests,
    Samples,
    http_client,
    ingester,
    lag_sampler,
    memory_sampler,
    pct,
    pg_client,
    rss_kib,
    rss_sampler,
)
from serving import free_port, start_server, wanka  # noqa: E402

from warehouse.demo import DEMO_START, build_demo  # noqa: E402
from warehouse.dynamic.catalog import names  # noqa: E402
from warehouse.kernel.engine import Engine  # noqa: E402
from warehouse.query.executor import execute  # noqa: E402
from warehouse.simulate import SimConfig, simulate_cluster, write_formats  # noqa: E402


def prepare(folder: Path, gpus: int, batches: int, freshness_s: int) -> tuple[str, list[Path]]:
    """The database (demo, users, short freshness) and `batches` DCGM files to ingest later."""
    db = str(folder / "load.duckdb")
    demo = SimConfig(gpus=gpus, hours=2, warmup_hours=6, seed=1)
    with Engine(db) as engine:
        build_demo(engine, demo)
        cur = engine.cursor()
        for name in names(cur):
            sql = f"ALTER DYNAMIC TABLE {name} SET (freshness = '{freshness_s} seconds')"
            execute(cur, sql).read_all()
        cur.close()
    for user, role in ((READER, "reader"), (WRITER, "writer")):
        wanka(db, "user", "add", user, "--role", role, "--password-stdin", stdin=PASSWORD + "\n")
    scrapes_per_batch = 5  # each file holds 5 one-minute scrapes of every GPU
    later = SimConfig(
        gpus=gpus,
        hours=batches * scrapes_per_batch / 60 + 0.1,
        warmup_hours=0,
        seed=1,
        start=DEMO_START + timedelta(hours=2),
    )
    cluster = simulate_cluster(later)
    per_scrape = cluster.sample_count // later.steps
    files = write_formats(
        cluster, folder / "later", kinds=("dcgm",), max_rows=per_scrape * scrapes_per_batch
    )
    return db, files["dcgm"][:batches]


def start_load_server(
    db: str, memory_limit: str | None
) -> tuple[subprocess.Popen[bytes], str, int]:
    """The server under load: pgwire on, the scheduler looking every second."""
    pg_port = free_port()
    limit = ["--memory-limit", memory_limit] if memory_limit else []
    options = ["--pg-port", str(pg_port), "--refresh-interval-s", "1", *limit]
    process, url = start_server(db, *options)
    return process, url, pg_port


def refreshes_since(url: str, since_epoch: float) -> dict[str, tuple[int, int]]:
    sql = (
        "SELECT name, count(*) FILTER (WHERE state = 'succeeded'), "
        "count(*) FILTER (WHERE state <> 'succeeded') FROM wanka.refresh_history "
        f"WHERE started_at >= to_timestamp({since_epoch}) GROUP BY name"
    )
    answer = httpx.post(f"{url}/v1/query", json={"sql": sql}, auth=(READER, PASSWORD), timeout=60)
    answer.raise_for_status()
    return {name: (ok, failed) for name, ok, failed in answer.json()["rows"]}


def report(
    args: argparse.Namespace,
    faces: dict[str, Face],
    ingests: Ingests,
    samples: Samples,
    refreshes: dict[str, tuple[int, int]],
    elapsed: float,
) -> None:
    limit = args.memory_limit or "DuckDB's default"
    print(f"\nserver memory limit: {limit}; the database grows by the ingest batches below")
    print(
        f"\n{elapsed:.0f} s under load; 1 query in {PROVOKE_EVERY} per client is bad SQL"
        " on purpose\n"
    )
    print("| face | clients | queries | q/s | p50 ms | p99 ms | errors | provoked (clean) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, face in faces.items():
        n = len(face.latencies)
        clean = face.provoked - len(face.provoked_wrong)
        print(
            f"| {name} | {face.clients} | {n:,} | {n / elapsed:,.1f} | "
            f"{pct(face.latencies, 0.5) * 1e3:,.0f} | {pct(face.latencies, 0.99) * 1e3:,.0f} | "
            f"{len(face.errors)} | {face.provoked} ({clean}) |"
        )
    n = len(ingests.seconds)
    print(
        f"\n| ingest (DCGM text via HTTP) | batches | rows | p50 s | max s | errors |\n"
        f"|---|---:|---:|---:|---:|---:|\n"
        f"| every {args.ingest_every_s:g} s | {n} | {ingests.rows:,} | "
        f"{statistics.median(ingests.seconds) if n else float('nan'):.2f} | "
        f"{max(ingests.seconds, default=float('nan')):.2f} | {len(ingests.errors)} |"
    )
    print("\n| dynamic table | freshness s | lag p50 s | lag max s | refreshes ok | failed |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in sorted(samples.freshness):
        lags = samples.lag.get(name, [])
        ok, failed = refreshes.get(name, (0, 0))
        print(
            f"| {name} | {samples.freshness[name]:g} | {pct(lags, 0.5):.1f} | "
            f"{max(lags, default=float('nan')):.1f} | {ok} | {failed} |"
        )
    print_memory(samples)
    for name, face in faces.items():
        for line in (face.errors + face.provoked_wrong)[:5]:
            print(f"{name} error: {line}")
    for line in (ingests.errors + samples.errors)[:5]:
        print(f"ingest/sampler error: {line}")


def print_memory(samples: Samples) -> None:
    """Server memory over the run: RSS, and the part DuckDB's buffer manager holds."""
    rss = [k / 1024 for k in samples.rss_kib]
    duckdb = [b / 2**20 for b in samples.duckdb_bytes]
    series = {
        "RSS MiB": rss,
        "DuckDB buffer manager MiB": duckdb,
        # the rest: allocators, Python, DuckDB outside its buffer manager (samples 1 s apart)
        "RSS − DuckDB buffer manager MiB": [r - d for r, d in zip(rss[1:], duckdb, strict=False)],
        "Python objects (thousands)": [b / 1e3 for b in samples.python_blocks],
    }
    print("\n| server memory, sampled every 1 s | start | max | end | at each tenth of the run |")
    print("|---|---:|---:|---:|---|")
    for name, values in series.items():
        if not values:
            continue
        tenths = [values[min(len(values) - 1, i * len(values) // 10)] for i in range(10)]
        print(
            f"| {name} | {values[0]:,.0f} | {max(values):,.0f} | {values[-1]:,.0f} | "
            + ", ".join(f"{v:,.0f}" for v in [*tenths, values[-1]])
            + " |"
        )
    print()
    for name in ("RSS MiB", "RSS − DuckDB buffer manager MiB"):
        values = series[name]
        if len(values) < 120:  # too short to speak of a trend
            continue
        # once warm: the median of the second half's first half against that of the last tenth
        half, n = len(values) // 2, len(values)
        early = statistics.median(values[half : half + n // 4])
        late = statistics.median(values[-(n // 10) :])
        minutes = (n - n // 20 - (half + n // 8)) / 60  # between the two windows' middles
        print(
            f"{name.removesuffix(' MiB')}, second half of the run: median {early:,.0f} MiB, then "
            f"{late:,.0f} MiB in the last tenth ({late - early:+,.0f} MiB, "
            f"{(late - early) / minutes:+,.1f} MiB a minute)  "
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration-s", type=float, default=300)
    parser.add_argument("--http-clients", type=int, default=64)
    parser.add_argument("--pg-clients", type=int, default=32)
    parser.add_argument("--ingest-every-s", type=float, default=3.0)
    parser.add_argument("--freshness-s", type=int, default=15)
    parser.add_argument("--gpus", type=int, default=256)
    parser.add_argument(
        "--memory-limit", default="1GB", help="the server's DuckDB memory limit (wanka serve's)"
    )
    parser.add_argument(
        "--live-feed",
        action="store_true",
        help="instead: remote_write a scrape of --gpus × 40 fields every --interval-s and "
        "measure the lag from scrape to queryable (bench/live_feed.py)",
    )
    parser.add_argument("--interval-s", type=float, default=15.0)
    parser.add_argument("--shards", type=int, default=8, help="--live-feed's connections")
    args = parser.parse_args()
    if args.live_feed:
        from live_feed import run_live_feed

        run_live_feed(args.gpus, args.duration_s, args.interval_s, args.shards)
        return
    batches = int(args.duration_s / args.ingest_every_s) + 1
    with tempfile.TemporaryDirectory(prefix="wanka-load-") as tmp:
        t0 = time.perf_counter()
        db, files = prepare(Path(tmp), args.gpus, batches, args.freshness_s)
        print(f"prepared {args.gpus} GPUs' demo + {len(files)} DCGM files in "
              f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
        process, url, pg_port = start_load_server(db, args.memory_limit)
        try:
            run(args, process, url, pg_port, files)
        finally:
            process.terminate()
            process.wait(timeout=60)


def run(
    args: argparse.Namespace,
    process: subprocess.Popen[bytes],
    url: str,
    pg_port: int,
    files: list[Path],
) -> None:
    stop = threading.Event()
    faces = {"HTTP": Face(args.http_clients), "pgwire": Face(args.pg_clients)}
    ingests, samples = Ingests(), Samples()
    jobs: list[tuple[Callable[..., None], tuple[object, ...]]] = [
        (http_client, (url, faces["HTTP"], stop, i)) for i in range(args.http_clients)
    ]
    jobs += [(pg_client, (pg_port, faces["pgwire"], stop, i)) for i in range(args.pg_clients)]
    jobs += [(ingester, (url, files, args.ingest_every_s, ingests, stop))]
    jobs += [(rss_sampler, (process.pid, samples, stop)), (lag_sampler, (url, samples, stop))]
    jobs += [(memory_sampler, (url, samples, stop))]
    samples.rss_kib.append(rss_kib(process.pid))
    since = time.time()
    threads = [threading.Thread(target=f, args=a, daemon=True) for f, a in jobs]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait(args.duration_s)
    stop.set()
    for thread in threads:
        thread.join(timeout=300)
    elapsed = time.perf_counter() - started
    samples.rss_kib.append(rss_kib(process.pid))
    alive = process.poll() is None
    refreshes = refreshes_since(url, since) if alive else {}
    report(args, faces, ingests, samples, refreshes, elapsed)
    if not alive:
        raise SystemExit(f"the server died (exit status {process.returncode})")


if __name__ == "__main__":
    main()
