"""PostgreSQL wire endpoint vs a real PostgreSQL serving the same table, side by side.

A 1M-row table `bench_rows(id BIGINT, ts TIMESTAMPTZ, host VARCHAR, gpu INTEGER, value DOUBLE)`
is loaded into a temporary wanka warehouse (served by `wanka`'s pgwire in a process of its own,
so client and server do not share a GIL) and into a throwaway PostgreSQL 15 (initdb in a temp
folder). Then, median of `--repeats` runs each:

- `SELECT * FROM bench_rows` fetched whole by psycopg 3 (text), psycopg 3 (binary), psycopg2,
  the two servers alternating run by run so a busy machine slows both alike;
- 50 concurrent connections each running a trivial query `--queries` times: p50/p95 latency.

Prints a markdown table of rows/s (or ms) for both servers and the ratio wanka/PostgreSQL.

    .venv/bin/python bench/bench_pgwire.py [--rows 1000000] [--repeats 5] [--clients 50]
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
from pathlib import Path

import psycopg
import psycopg2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.service.pgwire import realpg  # noqa: E402

PASSWORD = "bench-pw"
TABLE_SQL = """
CREATE TABLE bench_rows AS
SELECT range AS id,
       TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(range) AS ts,
       'gpu' || lpad(CAST(range % 1250 AS VARCHAR), 4, '0') AS host,
       CAST(range % 8 AS INTEGER) AS gpu,
       round(random() * 700, 3) AS value
FROM range({rows})
"""
SERVE = """
import sys
from service.pgwire import start
from service.serve.server import Limits, Server
from warehouse.security import users
server = Server(sys.argv[1], limits=Limits(timeout_s=600))
cur = server.engine.cursor()
users.add_user(cur, "bench", "reader", sys.argv[2])
cur.execute(sys.argv[3])
cur.close()
handle = start(server, "127.0.0.1", 0)
print(handle.port, flush=True)
sys.stdin.read()
"""


def serve_wanka(folder: Path, rows: int) -> tuple[subprocess.Popen[str], int]:
    """wanka's pgwire over a fresh warehouse holding bench_rows, in a child process."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SERVE,
            str(folder / "w.duckdb"),
            PASSWORD,
            TABLE_SQL.format(rows=rows),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def load_postgres(dsn: str, wanka_dsn: str) -> None:
    """The same rows into PostgreSQL, copied out of wanka (COPY TO STDOUT -> COPY FROM STDIN)."""
    with psycopg.connect(dsn, autocommit=True) as pg, psycopg.connect(wanka_dsn) as wk:
        pg.execute("DROP TABLE IF EXISTS bench_rows")
        pg.execute(
            "CREATE TABLE bench_rows (id BIGINT, ts TIMESTAMPTZ, host TEXT, gpu INTEGER, "
            "value DOUBLE PRECISION)"
        )
        with (
            wk.cursor().copy("COPY bench_rows TO STDOUT") as out,
            pg.cursor().copy("COPY bench_rows FROM STDIN") as into,
        ):
            for chunk in out:
                into.write(chunk)
        pg.execute("VACUUM ANALYZE bench_rows")


def fetch_psycopg(dsn: str, binary: bool) -> int:
    with psycopg.connect(dsn) as conn, conn.cursor(binary=binary) as cur:
        cur.execute("SELECT * FROM bench_rows")
        return len(cur.fetchall())


def fetch_psycopg2(dsn: str) -> int:
    conn = psycopg2.connect(dsn)
    try:
        cur = conn.cursor()
        cur.execute("SELECT * FROM bench_rows")
        return len(cur.fetchall())
    finally:
        conn.close()


def rows_per_s(fetch: Callable[[], int], repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        count = fetch()
        rates.append(count / (time.perf_counter() - started))
    return statistics.median(rates)


def latencies_ms(dsn: str, clients: int, queries: int) -> tuple[float, float]:
    """p50 and p95 of a trivial query, `clients` connections at once."""
    conns = [psycopg.connect(dsn, autocommit=True) for _ in range(clients)]
    samples: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def work(conn: psycopg.Connection) -> None:
        mine = []
        start.wait()
        for i in range(queries):
            began = time.perf_counter()
            conn.execute("SELECT %s::int + 1", [i]).fetchone()
            mine.append((time.perf_counter() - began) * 1000)
        with lock:
            samples.extend(mine)

    threads = [threading.Thread(target=work, args=(c,)) for c in conns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for conn in conns:
        conn.close()
    samples.sort()
    return samples[len(samples) // 2], samples[int(len(samples) * 0.95)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    binaries = realpg.find_binaries()
    if binaries is None:
        sys.exit("bench_pgwire needs PostgreSQL's initdb and postgres (apt-get install postgresql)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        child, port = serve_wanka(folder, args.rows)
        pg = realpg.start(folder / "pg", binaries)
        try:
            wanka_dsn = (
                f"host=127.0.0.1 port={port} dbname=wanka user=bench "
                f"password={PASSWORD} sslmode=disable"
            )
            load_postgres(pg.dsn(), wanka_dsn)
            servers = {"wanka": wanka_dsn, "PostgreSQL": pg.dsn()}
            fetches: dict[str, Callable[[str], int]] = {
                "psycopg3 text rows/s": lambda d: fetch_psycopg(d, False),
                "psycopg3 binary rows/s": lambda d: fetch_psycopg(d, True),
                "psycopg2 rows/s": fetch_psycopg2,
            }
            results: dict[str, dict[str, float]] = {name: {} for name in servers}
            for dsn in servers.values():
                fetch_psycopg(dsn, False)  # warm caches once
            for measure, fetch in fetches.items():
                # alternate the servers run by run: a busy machine then slows both alike
                rates: dict[str, list[float]] = {name: [] for name in servers}
                for _ in range(args.repeats):
                    for name, dsn in servers.items():
                        rates[name].append(rows_per_s(lambda f=fetch, d=dsn: f(d), 1))
                for name in servers:
                    results[name][measure] = statistics.median(rates[name])
            for name, dsn in servers.items():
                p50, p95 = latencies_ms(dsn, args.clients, args.queries)
                results[name][f"{args.clients} clients p50 ms"] = p50
                results[name][f"{args.clients} clients p95 ms"] = p95
        finally:
            pg.stop()
            assert child.stdin is not None
            child.stdin.close()
            child.wait(timeout=30)
    print(f"\n{args.rows:,} rows (id, ts, host, gpu, value), median of {args.repeats}\n")
    print("| measure | wanka | PostgreSQL 15 | wanka / PostgreSQL |")
    print("|---|---:|---:|---:|")
    for measure in results["wanka"]:
        ours, theirs = results["wanka"][measure], results["PostgreSQL"][measure]
        shown = (lambda v: f"{v:,.0f}") if "rows/s" in measure else (lambda v: f"{v:.2f}")
        print(f"| {measure} | {shown(ours)} | {shown(theirs)} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
