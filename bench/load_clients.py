"""The clients and samplers bench_load.py drives a served warehouse with."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

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


def picks(seed: int, stop: threading.Event) -> Iterator[tuple[bool, str]]:
    """(bad on purpose?, SQL) for one client until `stop`: a random query, every
    PROVOKE_EVERY-th one bad SQL (offset by `seed`, so the bad ones spread over clients)."""
    rng = random.Random(seed)
    n = 0
    while not stop.is_set():
        n += 1
        bad = (n + seed) % PROVOKE_EVERY == 0
        yield bad, BAD_SQL if bad else rng.choice(QUERIES)


def http_client(url: str, face: Face, stop: threading.Event, seed: int) -> None:
    lat, errors, wrong, provoked = [], [], [], 0
    with httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=120) as client:
        for bad, sql in picks(seed, stop):
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
    lat, errors, wrong, provoked = [], [], [], 0
    dsn = f"host=127.0.0.1 port={port} dbname=wanka user={READER} password={PASSWORD}"
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=60)
    except psycopg.Error as error:
        face.record([], [f"connect: {error}"], 0, [])
        return
    with conn:
        for bad, sql in picks(seed, stop):
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
    duckdb_bytes: list[float] = field(default_factory=list)  # its buffer manager, all tags
    python_blocks: list[float] = field(default_factory=list)
    lag: dict[str, list[float]] = field(default_factory=dict)
    freshness: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def rss_sampler(pid: int, samples: Samples, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        samples.rss_kib.append(rss_kib(pid))


def memory_sampler(url: str, samples: Samples, stop: threading.Event) -> None:
    """Who holds the memory: DuckDB's buffer manager and Python's allocator, from /metrics."""
    with httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=60) as client:
        while not stop.wait(1.0):
            try:
                answer = client.get("/metrics")
                answer.raise_for_status()
            except httpx.HTTPError as error:
                samples.errors.append(str(error))
                continue
            duckdb, blocks = 0.0, 0.0
            for line in answer.text.splitlines():
                if line.startswith("wanka_duckdb_memory_bytes{"):
                    duckdb += float(line.split()[-1])
                elif line.startswith("wanka_python_allocated_blocks"):
                    blocks = float(line.split()[-1])
            samples.duckdb_bytes.append(duckdb)
            samples.python_blocks.append(blocks)


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


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
