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

Run: .venv/bin/python bench/bench_load.py [--duration-s 120] [--http-clients 64] [--pg-clients 32]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from warehouse.demo import DEMO_START, build_demo  # noqa: E402
from warehouse.dynamic.catalog import names  # noqa: E402
from warehouse.engine import Engine  # noqa: E402
from warehouse.query import execute  # noqa: E402
from warehouse.simulate import SimConfig, simulate_cluster, write_formats  # noqa: E402

READER, WRITER, PASSWORD = "reader", "writer", "load-pw"
PROVOKE_EVERY = 50
BAD_SQL = "SELECT * FROM no_such_table"
QUERIES = (
    "SELECT count(*), avg(value) FROM gpu_metrics WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' "
    "AND ts > (SELECT max(ts) FROM gpu_metrics) - INTERVAL 10 MINUTE",
    "SELECT state, count(*) AS jobs FROM jobs GROUP BY state ORDER BY jobs DESC",
    "SELECT n.cluster, count(*) AS hosts, sum(n.gpus) AS gpus FROM nodes n GROUP BY 1",
    "SELECT host, avg(util_pct) AS util FROM gpu_hourly_host GROUP BY 1 ORDER BY 2 DESC LIMIT 10",
    "SELECT * FROM energy_cluster_daily ORDER BY day DESC, cluster LIMIT 20",
    "SELECT account, sum(gpu_hours) AS h FROM job_gpu_hours_daily GROUP BY 1 ORDER BY 2 DESC "
    "LIMIT 5",
    "SELECT model, sum(xid_samples) AS xids FROM xid_errors_by_model GROUP BY 1",
)
LAG_SQL = (
    "SELECT name, epoch(CAST(freshness AS INTERVAL)), epoch(now()) - epoch(data_timestamp) "
    "FROM wanka.dynamic_tables"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wanka(db: str, *args: str, stdin: str | None = None) -> None:
    command = [sys.executable, "-c", "from service.cli import main; main()", "--db", db, *args]
    subprocess.run(command, input=stdin, text=True, check=True, cwd=REPO, capture_output=True)


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


@dataclass
class Face:
    """What one kind of client saw."""

    clients: int
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    provoked: int = 0
    provoked_wrong: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, latencies: list[float], errors: list[str], provoked: int, wrong: list[str]):
        with self.lock:
            self.latencies += latencies
            self.errors += errors
            self.provoked += provoked
            self.provoked_wrong += wrong


def http_client(url: str, face: Face, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    lat, errors, wrong, provoked = [], [], [], 0
    with httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=120) as client:
        n = 0
        while not stop.is_set():
            n += 1
            bad = (n + seed) % PROVOKE_EVERY == 0  # spread over clients
            sql = BAD_SQL if bad else rng.choice(QUERIES)
            started = time.perf_counter()
            try:
                answer = client.post("/v1/query", json={"sql": sql})
            except httpx.HTTPError as error:
                errors.append(f"{type(error).__name__}: {error}")
                continue
            if bad:
                provoked += 1
                if answer.status_code != 400:
                    wrong.append(f"{answer.status_code} {answer.text[:200]}")
            elif answer.status_code == 200:
                lat.append(time.perf_counter() - started)
            else:
                errors.append(f"{answer.status_code} {answer.text[:200]}")
    face.record(lat, errors, provoked, wrong)


def pg_client(port: int, face: Face, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    lat, errors, wrong, provoked = [], [], [], 0
    dsn = f"host=127.0.0.1 port={port} dbname=wanka user={READER} password={PASSWORD}"
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=60)
    except psycopg.Error as error:
        face.record([], [f"connect: {error}"], 0, [])
        return
    with conn:
        n = 0
        while not stop.is_set():
            n += 1
            bad = (n + seed) % PROVOKE_EVERY == 0  # spread over clients
            sql = BAD_SQL if bad else rng.choice(QUERIES)
            started = time.perf_counter()
            try:
                conn.execute(sql, prepare=False).fetchall()
            except psycopg.Error as error:
                if bad:
                    provoked += 1
                else:
                    errors.append(f"{type(error).__name__}: {error}")
                if conn.closed:
                    break
                continue
            if bad:
                wrong.append("bad SQL answered without an error")
            else:
                lat.append(time.perf_counter() - started)
    face.record(lat, errors, provoked, wrong)


@dataclass
class Samples:
    rss_kib: list[int] = field(default_factory=list)
    lag: dict[str, list[float]] = field(default_factory=dict)
    freshness: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def rss_sampler(pid: int, samples: Samples, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        samples.rss_kib.append(rss_kib(pid))


def lag_sampler(url: str, samples: Samples, stop: threading.Event) -> None:
    with httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=60) as client:
        while not stop.wait(1.0):
            try:
                answer = client.post("/v1/query", json={"sql": LAG_SQL})
                answer.raise_for_status()
            except httpx.HTTPError as error:
                samples.errors.append(str(error))
                continue
            for name, fresh, lag in answer.json()["rows"]:
                samples.freshness[name] = fresh
                if lag is not None:
                    samples.lag.setdefault(name, []).append(lag)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@dataclass
class Ingests:
    seconds: list[float] = field(default_factory=list)
    rows: int = 0
    errors: list[str] = field(default_factory=list)


def ingester(url: str, files: list[Path], every_s: float, out: Ingests, stop: threading.Event):
    with httpx.Client(base_url=url, auth=(WRITER, PASSWORD), timeout=300) as client:
        for path in files:
            if stop.wait(every_s):
                return
            started = time.perf_counter()
            try:
                answer = client.post(f"/v1/ingest/dcgm?name={path.name}", content=path.read_bytes())
            except httpx.HTTPError as error:
                out.errors.append(str(error))
                continue
            if answer.status_code != 200:
                out.errors.append(f"{answer.status_code} {answer.text[:200]}")
                continue
            out.seconds.append(time.perf_counter() - started)
            out.rows += sum(sum(r["rows"].values()) for r in answer.json())


def start_server(db: str, memory_limit: str | None) -> tuple[subprocess.Popen[bytes], str, int]:
    http_port, pg_port = free_port(), free_port()
    limit = ["--memory-limit", memory_limit] if memory_limit else []
    command = [
        sys.executable, "-c", "from service.cli import main; main()", "--db", db, "serve",
        "--http-port", str(http_port), "--pg-port", str(pg_port), "--refresh-interval-s", "1",
        *limit,
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, env=dict(os.environ))
    url = f"http://127.0.0.1:{http_port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url, pg_port
        except httpx.TransportError:
            time.sleep(0.05)  # polling for start-up, not timing anything
    process.kill()
    raise SystemExit("wanka serve did not start")


def refreshes_since(url: str, since_epoch: float) -> dict[str, tuple[int, int]]:
    sql = (
        "SELECT name, count(*) FILTER (WHERE state = 'succeeded'), "
        "count(*) FILTER (WHERE state <> 'succeeded') FROM wanka.refresh_history "
        f"WHERE started_at >= to_timestamp({since_epoch}) GROUP BY name"
    )
    answer = httpx.post(f"{url}/v1/query", json={"sql": sql}, auth=(READER, PASSWORD), timeout=60)
    answer.raise_for_status()
    return {name: (ok, failed) for name, ok, failed in answer.json()["rows"]}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


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
    rss = [k / 1024 for k in samples.rss_kib] or [float("nan")]
    tenths = [rss[min(len(rss) - 1, i * len(rss) // 10)] for i in range(10)] + [rss[-1]]
    print(
        f"\n| server RSS MiB | start | max | end |\n|---|---:|---:|---:|\n"
        f"| sampled every 1 s ({len(rss)} samples) | {rss[0]:,.0f} | {max(rss):,.0f} | "
        f"{rss[-1]:,.0f} |\n\nRSS at each tenth of the run (MiB): "
        + ", ".join(f"{v:,.0f}" for v in tenths)
    )
    for name, face in faces.items():
        for line in (face.errors + face.provoked_wrong)[:5]:
            print(f"{name} error: {line}")
    for line in (ingests.errors + samples.errors)[:5]:
        print(f"ingest/sampler error: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration-s", type=float, default=120)
    parser.add_argument("--http-clients", type=int, default=64)
    parser.add_argument("--pg-clients", type=int, default=32)
    parser.add_argument("--ingest-every-s", type=float, default=3.0)
    parser.add_argument("--freshness-s", type=int, default=15)
    parser.add_argument("--gpus", type=int, default=256)
    parser.add_argument("--memory-limit", help="the server's DuckDB memory limit, e.g. 512MB")
    args = parser.parse_args()
    batches = int(args.duration_s / args.ingest_every_s) + 1
    with tempfile.TemporaryDirectory(prefix="wanka-load-") as tmp:
        t0 = time.perf_counter()
        db, files = prepare(Path(tmp), args.gpus, batches, args.freshness_s)
        print(f"prepared {args.gpus} GPUs' demo + {len(files)} DCGM files in "
              f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
        process, url, pg_port = start_server(db, args.memory_limit)
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
