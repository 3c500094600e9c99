"""HTTP query service: a real `wanka serve` against DuckDB in-process and PostgreSQL 15.

Prints (medians of several runs, one machine, one run of this script):
1. a 1M-row result fetched in-process (DuckDB → Arrow) and over HTTP as Arrow, Parquet, CSV,
   NDJSON and JSON: seconds, rows/s, and the ratio to in-process (Arrow's target: ≥ 0.5);
2. a trivial query (`SELECT 1`) from 32 clients (wrk, C: the load costs the server nothing),
   side by side with the same query from 32 pgbench clients against a real PostgreSQL 15 on
   the same machine: queries/s, p50, p99, and the server's CPU per query (targets: ≥ 1,000
   queries/s, p50 ≤ 40 ms); then a py-spy profile of one more run: where the GIL went.

Run: .venv/bin/python bench/bench_http.py [--rows 1000000] [--runs 5] [--clients 32]
     [--seconds 10] [--repeats 3]     (wrk: apt-get install wrk)
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import httpx
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import trivial as trivial_load  # bench/ is the script's folder on sys.path
from serving import start_server, wanka

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


def trivial(url: str, pid: int, clients: int, seconds: float, repeats: int) -> list[str]:
    """`SELECT 1` over HTTP (wrk) and against PostgreSQL (pgbench), alternating run by run."""
    import shutil
    import sys

    sys.path.insert(0, str(REPO))
    from tests.service.pgwire import realpg

    if shutil.which("wrk") is None:
        return ["(wrk is not installed: apt-get install wrk)"]
    binaries = realpg.find_binaries()
    auth = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    body = json.dumps({"sql": "SELECT 1"})
    target = f"{url}/v1/query"
    ours: list[trivial_load.Run] = []
    theirs: list[trivial_load.Run] = []
    with tempfile.TemporaryDirectory() as folder:
        pg = realpg.start(Path(folder) / "pg", binaries) if binaries else None
        try:
            trivial_load.wrk(target, body, auth, clients, 2)  # warm: credentials, pools
            for _ in range(repeats):
                ours.append(
                    trivial_load.with_cpu(
                        pid, lambda: trivial_load.wrk(target, body, auth, clients, seconds)
                    )
                )
                if pg is not None:
                    theirs.append(
                        trivial_load.with_cpu(
                            None,
                            lambda: trivial_load.pgbench(
                                "127.0.0.1", pg.port, "postgres", "", clients, seconds, "simple"
                            ),
                        )
                    )
            profile = trivial_load.profile(
                pid, seconds, lambda: trivial_load.wrk(target, body, auth, clients, seconds + 1)
            )
        finally:
            if pg is not None:
                pg.stop()
    return [*_trivial_table(ours, theirs, clients, seconds, repeats), "", *profile]


def _trivial_table(
    ours: list[trivial_load.Run],
    theirs: list[trivial_load.Run],
    clients: int,
    seconds: float,
    repeats: int,
) -> list[str]:
    mine = trivial_load.median(ours)
    pg = trivial_load.median(theirs) if theirs else None
    lines = [
        f"`SELECT 1` from {clients} clients, {seconds:g} s a run, median of {repeats} runs "
        "(each run's figure in brackets)",
        "",
        f"| | wanka HTTP (wrk, {clients} connections) | PostgreSQL 15 (pgbench, {clients}) "
        "| wanka / PostgreSQL |",
        "|---|---:|---:|---:|",
    ]

    def row(label: str, get: Callable[[trivial_load.Run], float | None], fmt: str) -> str:
        each = ", ".join(fmt.format(get(r)) for r in ours if get(r) is not None)
        value, ref = get(mine), get(pg) if pg else None
        shown = fmt.format(value) if value is not None else "–"
        other = fmt.format(ref) if ref is not None else "–"
        ratio = f"{value / ref:.2f}" if value and ref else "–"
        return f"| {label} | {shown} ({each}) | {other} | {ratio} |"

    lines.append(row("queries/s", lambda r: r.qps, "{:,.0f}"))
    lines.append(row("p50 ms", lambda r: r.p50_ms, "{:.1f}"))
    lines.append(row("p99 ms", lambda r: r.p99_ms, "{:.1f}"))
    lines.append(row("server CPU per query, ms", lambda r: r.cpu_ms, "{:.2f}"))
    meets = mine.qps >= 1000 and mine.p50_ms <= 40
    lines += [
        "",
        f"target ≥ 1,000 queries/s and p50 ≤ 40 ms: {'meets' if meets else 'MISSES'} "
        f"({mine.qps:,.0f} queries/s, p50 {mine.p50_ms:.1f} ms)",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "bench.duckdb")
        wanka(db, "user", "add", USER, "--role", "reader", "--password-stdin", stdin=PASSWORD)
        process, url = start_server(
            db, "--pg-port", "0", "--refresh-interval-s", "0", "--max-rows-json", str(args.rows)
        )
        try:
            results = throughput(url, args.rows, args.runs)
            lines = trivial(url, process.pid, args.clients, args.seconds, args.repeats)
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
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
