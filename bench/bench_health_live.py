"""`wanka health` on the demo warehouse (`make run`'s): how long the command takes, and how soon
a fault that arrives while `wanka serve` runs shows in GET /v1/health (the freshness target of
the health dynamic tables is 1 minute).

Run: `.venv/bin/python bench/bench_health_live.py [--gpus 10000] [--db PATH]`.

1. Build the demo (`wanka demo --no-serve`: 10,000 GPUs x 1 h, 2 faults of each kind), unless
   `--db` names one already built.
2. `wanka health` as a person runs it (a new process: start, open, bring gpu_windows and
   health_findings up to date, report), 5 times; then `--format json`, 5 times.
3. `wanka serve` on it; a healthy GPU's dcgm-exporter scrape with XID 79 (fell off the bus),
   30 s after the newest telemetry, is POSTed to /v1/ingest/dcgm, and GET /v1/health is polled
   until the GPU is `drain` by `xid_drain`: the seconds from the ingest's answer to that.
   Three faults, one after another, each on another GPU.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.serving import REPO, WANKA, start_server, wanka

WRITER, PASSWORD = "bench-writer", "bench-health-pw-1"


def timed(db: str, *args: str) -> float:
    started = time.perf_counter()
    ran = subprocess.run([*WANKA, "--db", db, *args], cwd=REPO, capture_output=True, text=True)
    if ran.returncode:
        raise SystemExit(f"wanka {' '.join(args)}: exit {ran.returncode}: {ran.stderr.strip()}")
    return time.perf_counter() - started


def healthy_gpus(db: str, n: int) -> list[tuple[str, int, str, int]]:
    """(host, gpu, uuid, ms) of `n` GPUs with no finding, and the time 30 s after the newest
    telemetry, in ms."""
    con = duckdb.connect(db, read_only=True)
    try:
        (newest,) = con.execute(
            "SELECT epoch_ms(max(ts_max)) + 30000 FROM wanka.sample_batches"
        ).fetchone() or (None,)
        rows = con.execute(
            "SELECT DISTINCT host, gpu, uuid FROM wanka.gpu_series "
            "WHERE metric = 'DCGM_FI_DEV_XID_ERRORS' AND gpu IS NOT NULL "
            "AND host NOT IN (SELECT host FROM health_findings) "
            "AND host IN (SELECT host FROM nodes WHERE state = 'up') ORDER BY host, gpu LIMIT ?",
            [n * 8],
        ).fetchall()
    finally:
        con.close()
    picked = rows[::8][:n]  # another host each time
    return [(h, int(g), u, int(newest) + 60_000 * k) for k, (h, g, u) in enumerate(picked)]


def flagged(url: str, host: str, gpu: int) -> bool:
    report = httpx.get(f"{url}/v1/health", auth=(WRITER, PASSWORD), timeout=30).json()
    return any(
        g["host"] == host and g["gpu"] == gpu and any(r["rule"] == "xid_drain" for r in g["rules"])
        for g in report["gpus"]
    )


def live(db: str) -> list[float]:
    wanka(db, "user", "add", WRITER, "--role", "writer", "--password-stdin", stdin=PASSWORD)
    faults = healthy_gpus(db, 3)
    process, url = start_server(db, "--pg-port", "0")
    delays = []
    try:
        for host, gpu, uuid, ms in faults:
            labels = f'gpu="{gpu}",UUID="{uuid}",Hostname="{host}"'
            text = f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} 79 {ms}\n"
            answer = httpx.post(
                f"{url}/v1/ingest/dcgm", params={"name": f"xid-{host}-{gpu}.prom"},
                content=text.encode(), auth=(WRITER, PASSWORD), timeout=60,
            )  # fmt: skip
            answer.raise_for_status()
            stored = time.perf_counter()
            while not flagged(url, host, gpu):
                if time.perf_counter() - stored > 300:
                    raise SystemExit(f"{host} GPU {gpu}: not flagged 300 s after its XID 79")
                time.sleep(0.5)
            delays.append(time.perf_counter() - stored)
    finally:
        process.terminate()
        process.wait(timeout=60)
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--db", help="a demo warehouse already built (it gains a user)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wanka-health-live-") as tmp:
        db = args.db or str(Path(tmp) / "demo.duckdb")
        if not args.db:
            built = timed(db, "demo", "--no-serve", "--gpus", str(args.gpus))
            print(f"demo of {args.gpus:,} GPUs built in {built:.1f} s")
        timed(db, "health")  # the first run brings the health tables up to date
        table = [timed(db, "health") for _ in range(5)]
        as_json = [timed(db, "health", "--format", "json") for _ in range(5)]
        delays = live(db)
    print()
    print("| what | median s | min s | max s |")
    print("|---|---:|---:|---:|")
    for what, runs in (
        ("`wanka health` (table), new process each", table),
        ("`wanka health --format json`, new process each", as_json),
        ("XID 79 ingested -> GET /v1/health shows the GPU drain", delays),
    ):
        print(f"| {what} | {statistics.median(runs):.2f} | {min(runs):.2f} | {max(runs):.2f} |")


if __name__ == "__main__":
    main()
