"""HTTP query service: a real `wanka serve` against DuckDB in-process, side by side.

Prints three tables (medians of several runs, one machine, one run of this script):
1. a 1M-row result fetched in-process (DuckDB → Arrow) and over HTTP as Arrow, Parquet, CSV,
   NDJSON and JSON: seconds, rows/s, and the ratio to in-process (Arrow's target: ≥ 0.5);
2. the latency of a trivial query (`SELECT 1`) under 32 concurrent clients: p50, p90, p99, q/s.

Run: .venv/bin/python bench/bench_http.py [--rows 1000000] [--runs 5] [--clients 32]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import httpx
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from serving import start_server, wanka  # bench/ is the script's folder on sys.path

REPO = Path(__file__).resolve().parents[1]
QUERY = (
    "SELECT range AS i, range * 1.5 AS x, 'host-' || (range % 1250)::VARCHAR AS host, "
    "TIMESTAMPTZ '2026-01-01' + to_seconds(range) AS ts FROM range({rows})"
)
USER, PASSWORD = "bench", "bench-password"


def median_s(work: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def fetch(client: httpx.Client, sql: str, fmt: str) -> bytes:
    with client.stream("POST", "/v1/query", json={"sql": sql, "format": fmt}) as response:
        response.raise_for_status()
        return b"".join(response.iter_bytes(1 << 20))


def decoders(rows: int) -> dict[str, object]:
    """Per format: read the bytes into rows as a client would, returning the row count."""

    def arrow(data: bytes) -> int:
        return ipc.open_stream(data).read_all().num_rows

    def parquet(data: bytes) -> int:
        return pq.read_table(io.BytesIO(data)).num_rows

    def csv(data: bytes) -> int:
        return pacsv.read_csv(io.BytesIO(data)).num_rows

    def ndjson(data: bytes) -> int:
        return data.count(b"\n")

    def json_(data: bytes) -> int:
        import json

        return len(json.loads(data)["rows"])

    return {"arrow": arrow, "parquet": parquet, "csv": csv, "ndjson": ndjson, "json": json_}


def throughput(url: str, rows: int, runs: int) -> list[tuple[str, float]]:
    sql = QUERY.format(rows=rows)
    con = duckdb.connect()
    found = [("DuckDB in-process → Arrow", median_s(lambda: con.sql(sql).to_arrow_table(), runs))]
    with httpx.Client(base_url=url, auth=(USER, PASSWORD), timeout=600) as client:
        for fmt, decode in decoders(rows).items():
            got = decode(fetch(client, sql, fmt))  # type: ignore[operator]
            assert got == rows, f"{fmt}: {got} rows"
            took = median_s(lambda f=fmt, d=decode: d(fetch(client, sql, f)), runs)  # type: ignore[misc]
            found.append((f"HTTP {fmt} (fetch + decode)", took))
    return found


def latency(url: str, clients: int, per_client: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    lock = threading.Lock()
    ready = threading.Barrier(clients + 1)

    def client_loop() -> None:
        mine = []
        with httpx.Client(base_url=url, auth=(USER, PASSWORD), timeout=60) as client:
            client.post("/v1/query", json={"sql": "SELECT 1"}).raise_for_status()  # warm
            ready.wait()
            for _ in range(per_client):
                started = time.perf_counter()
                client.post("/v1/query", json={"sql": "SELECT 1"}).raise_for_status()
                mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return sorted(latencies), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--per-client", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "bench.duckdb")
        wanka(db, "user", "add", USER, "--role", "reader", "--password-stdin", stdin=PASSWORD)
        process, url = start_server(
            db, "--pg-port", "0", "--refresh-interval-s", "0", "--max-rows-json", str(args.rows)
        )
        try:
            results = throughput(url, args.rows, args.runs)
            lat, wall = latency(url, args.clients, args.per_client)
        finally:
            process.terminate()
            process.wait(timeout=30)
    base = results[0][1]
    print(f"\n{args.rows:,}-row result, median of {args.runs} runs ({os.cpu_count()} cores)")
    print(f"{'path':<34}{'seconds':>10}{'Mrows/s':>10}{'vs in-process':>15}")
    for name, seconds in results:
        print(
            f"{name:<34}{seconds:>10.3f}{args.rows / seconds / 1e6:>10.2f}{base / seconds:>15.2f}"
        )
    arrow = dict(results)["HTTP arrow (fetch + decode)"]
    verdict = "meets" if base / arrow >= 0.5 else "MISSES"
    print(
        f"Arrow over HTTP: {base / arrow:.0%} of in-process throughput ({verdict} the 50% target)"
    )
    by_name = dict(results)
    print(
        "JSON vs Arrow vs CSV throughput ratio: "
        f"{arrow / by_name['HTTP json (fetch + decode)']:.3f} : 1 : "
        f"{arrow / by_name['HTTP csv (fetch + decode)']:.3f}"
    )

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000

    print(f"\n`SELECT 1` under {args.clients} concurrent clients, {len(lat):,} requests")
    print(f"{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'queries/s':>12}")
    print(f"{pct(0.5):>10.1f}{pct(0.9):>10.1f}{pct(0.99):>10.1f}{len(lat) / wall:>12.0f}")


if __name__ == "__main__":
    main()
