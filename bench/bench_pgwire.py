"""PostgreSQL wire endpoint vs a real PostgreSQL serving the same table, side by side.

A 1M-row table `bench_rows(id BIGINT, ts TIMESTAMPTZ, host VARCHAR, gpu INTEGER, value DOUBLE)`
is loaded into a temporary wanka warehouse (served by `wanka`'s pgwire in a process of its own,
so client and server do not share a GIL) and into a throwaway PostgreSQL 15 (initdb in a temp
folder). Then, median of `--repeats` runs each:

- `SELECT * FROM bench_rows` fetched whole by psycopg 3 (text), psycopg 3 (binary), psycopg2,
  the two servers alternating run by run so a busy machine slows both alike;
- `SELECT 1` from 50 pgbench connections (PostgreSQL's own load generator, in C), simple and
  extended protocol, `--seconds` a run, servers alternating: queries/s, p50, p99 and the
  server's CPU per query (targets: ≥ 1,000 queries/s, p50 ≤ 40 ms), then a py-spy profile of
  wanka's server during one more run.

Prints markdown tables of rows/s (or ms) for both servers and the ratio wanka/PostgreSQL.

    .venv/bin/python bench/bench_pgwire.py [--rows 1000000] [--repeats 5] [--clients 50]
        [--seconds 10] [--trivial-repeats 3]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import psycopg2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import trivial as trivial_load  # noqa: E402  (bench/ is the script's folder on sys.path)

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


def trivial(
    port: int, pid: int, pg: realpg.RealPostgres, clients: int, seconds: float, repeats: int
) -> list[str]:
    """`SELECT 1` from pgbench against both servers, alternating, in both protocols."""
    lines: list[str] = []
    servers = {
        "wanka": ("127.0.0.1", port, "bench", PASSWORD, pid),
        "PostgreSQL": ("127.0.0.1", pg.port, "postgres", "", None),
    }
    for mode in ("simple", "extended"):
        runs: dict[str, list[trivial_load.Run]] = {name: [] for name in servers}
        for _ in range(repeats):
            for name, (host, at, user, password, watched) in servers.items():
                load = functools.partial(
                    trivial_load.pgbench, host, at, user, password, clients, seconds, mode
                )
                runs[name].append(trivial_load.with_cpu(watched, load))
        ours, theirs = trivial_load.median(runs["wanka"]), trivial_load.median(runs["PostgreSQL"])
        each = ", ".join(f"{r.qps:,.0f}" for r in runs["wanka"])
        meets = ours.qps >= 1000 and ours.p50_ms <= 40
        lines += [
            f"\n`SELECT 1`, {clients} pgbench clients, {mode} protocol, {seconds:g} s a run, "
            f"median of {repeats}",
            "",
            "| | wanka | PostgreSQL 15 | wanka / PostgreSQL |",
            "|---|---:|---:|---:|",
            f"| queries/s | {ours.qps:,.0f} ({each}) | {theirs.qps:,.0f} | "
            f"{ours.qps / theirs.qps:.2f} |",
            f"| p50 ms | {ours.p50_ms:.1f} | {theirs.p50_ms:.1f} | "
            f"{ours.p50_ms / max(theirs.p50_ms, 0.001):.1f} |",
            f"| p99 ms | {ours.p99_ms:.1f} | {theirs.p99_ms:.1f} | "
            f"{ours.p99_ms / max(theirs.p99_ms, 0.001):.1f} |",
            f"| wanka server CPU per query, ms | {ours.cpu_ms or 0:.2f} | – | – |",
            "",
            f"target ≥ 1,000 queries/s and p50 ≤ 40 ms: {'meets' if meets else 'MISSES'}",
        ]
    profile = trivial_load.profile(
        pid,
        seconds,
        lambda: trivial_load.pgbench(
            "127.0.0.1", port, "bench", PASSWORD, clients, seconds + 1, "simple"
        ),
    )
    return [*lines, "", *profile]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--trivial-repeats", type=int, default=3)
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
            lines = trivial(port, child.pid, pg, args.clients, args.seconds, args.trivial_repeats)
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
        print(f"| {measure} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
