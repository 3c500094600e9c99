"""Soak: an hour of a 10,000-GPU cluster's telemetry into `wanka serve`, with Grafana, a BI
tool and a GPU falling off the bus on the way; then the same at 2,500 GPUs.

Run: `.venv/bin/python bench/bench_soak.py [--gpus 10000] [--duration-s 3600] [--also-gpus 2500]
[--db PATH] [--dashboards 4]`; `--quick` is a smoke run (200 GPUs, 120 s, one size).

At each size, one run:
1. The demo warehouse of `--gpus` GPUs (`wanka demo --no-serve`, or `--db` built before), a
   reader and a remote_write user; `wanka serve` on it as shipped (HTTP, pgwire, the scheduler
   refreshing the dynamic tables to their own freshness targets).
2. The feed (soak_feed.py): Prometheus's remote_write of the demo's GPUs × 40 DCGM fields every
   15 s, 2,000 samples a request over 8 connections, stamped now (after the demo's telemetry).
   As a Prometheus with a target per node sends it, a scrape's requests are spread over the
   interval (its targets' scrapes are); `--burst` stamps and sends a scrape's all at once, the
   harsher load earlier runs measured.
3. Once the first scrape is in, `--dashboards` Grafana users (soak_clients.py), each on its own
   node of NVIDIA's dcgm-exporter dashboard (../shared/data/grafana), refreshed every 30 s:
   every panel for that node and the fleet view, PromQL ranges over the last hour at a 30 s
   step; and a BI tool over pgwire every 10 s (SQL over dynamic and base tables).
4. At half time one GPU's scrape reports DCGM_FI_DEV_XID_ERRORS = 79, as dcgm-exporter does;
   GET /v1/health is polled every second until it shows that GPU `drain` by `xid_drain`.
5. Every 2 s: the server's RSS (/proc), DuckDB's buffer manager and each dynamic table's lag
   and target (/metrics). At the end, every scrape's samples are counted in gpu_metrics.

It prints per size: the feed's lag (scrape time to answer) and backlog, the clients' latency,
each dynamic table's largest lag against its target (from the first refresh of the run on;
over the whole run for a table that needed none), memory at each tenth, the XID's time to
`drain`, the count check and every error; then a verdict per target for each size. The
clients share this process, on the same machine as the server.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from serving import WANKA, free_port, start_server, wanka  # noqa: E402
from soak_clients import (  # noqa: E402
    PASSWORD,
    READER,
    WRITER,
    Errors,
    Latencies,
    Samples,
    bi_client,
    dashboard_client,
    drain_shown,
    sampler,
    watch_drain,
)
from soak_feed import (  # noqa: E402
    FeedGpu,
    FeedLog,
    Sender,
    build_requests,
    demo_gpus,
    run_feed,
)
from soak_report import Soak, judge, print_verdicts, report  # noqa: E402

INTERVAL_S, SHARDS = 15.0, 8
DASHBOARD_EVERY_S, BI_EVERY_S, SAMPLE_EVERY_S = 30.0, 10.0, 2.0
DRAIN_WITHIN_S = 300.0  # how long to look for the drain after the XID, past the run if need be


def build(db: str, gpus: int) -> float | None:
    """The demo of `gpus` GPUs in `db` (left as it is when already built so), its closed
    windows then compacted (`wanka compact`), as a warehouse that has been running holds them:
    left hot, `wanka serve` compacts them at start, in turns with the feed's first deliveries
    (the hour of 2026-12-06 18:57 had its p99 from that). Seconds taken (None: built before)."""
    started = time.perf_counter()
    for args in (["demo", "--no-serve", "--gpus", str(gpus)], ["compact"]):
        ran = subprocess.run(
            [*WANKA, "--db", db, *args], cwd=REPO, capture_output=True, text=True
        )  # fmt: skip
        if ran.returncode:
            raise SystemExit(f"wanka {args[0]}: exit {ran.returncode}: {ran.stderr[-2000:]}")
        if "already built" in ran.stdout:
            return None
    return time.perf_counter() - started


def pick_faulty(db: str, gpus: list[FeedGpu]) -> int:
    """The GPU to fail: in the middle of the feed, on a host with no health finding (on a
    small demo where every host has one, a GPU with none)."""
    con = duckdb.connect(db, read_only=True)
    try:
        found = con.execute("SELECT DISTINCT host, gpu FROM health_findings").fetchall()
    finally:
        con.close()
    hosts = {host for host, _ in found}
    healthy = [i for i, g in enumerate(gpus) if g.host not in hosts]
    healthy = healthy or [i for i, g in enumerate(gpus) if (g.host, g.gpu) not in set(found)]
    if not healthy:
        raise SystemExit("every GPU of the feed has a health finding: none to fail")
    return healthy[len(healthy) // 2]


def count_stored(url: str, stamps_ms: list[int]) -> dict[int, int]:
    """Samples in gpu_metrics at each of the feed's timestamps (the demo's are all earlier)."""
    sql = (
        "SELECT epoch_ms(ts), count(*) FROM gpu_metrics "
        f"WHERE ts BETWEEN make_timestamptz({min(stamps_ms) * 1000}) "
        f"AND make_timestamptz({max(stamps_ms) * 1000}) GROUP BY 1"
    )
    answer = httpx.post(f"{url}/v1/query", json={"sql": sql}, auth=(READER, PASSWORD), timeout=600)
    answer.raise_for_status()
    return {int(ms): int(n) for ms, n in answer.json()["rows"]}


def refreshes_since(url: str, since_s: float) -> dict[str, tuple[int, int]]:
    sql = (
        "SELECT name, count(*) FILTER (WHERE state = 'succeeded'), "
        "count(*) FILTER (WHERE state <> 'succeeded') FROM wanka.refresh_history "
        f"WHERE started_at >= to_timestamp({since_s}) GROUP BY name"
    )
    answer = httpx.post(f"{url}/v1/query", json={"sql": sql}, auth=(READER, PASSWORD), timeout=60)
    answer.raise_for_status()
    return {name: (ok, failed) for name, ok, failed in answer.json()["rows"]}


def spawn(target: Callable[..., object], *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


@dataclass
class Run:
    """What the parts of one run record."""

    errors: Errors = field(default_factory=Errors)
    feed: FeedLog = field(default_factory=FeedLog)
    latencies: Latencies = field(default_factory=Latencies)
    samples: Samples = field(default_factory=Samples)
    drain_at: list[float | None] = field(default_factory=list)


def drive(
    url: str, pid: int, pg_port: int, fed: list[FeedGpu], faulty: int, args: argparse.Namespace
) -> tuple[Run, float]:
    """The feed for `--duration-s`, the clients beside it, the watch for the drain; (what they
    recorded, the time the first scrape was due)."""
    run, stop, feed_ended = Run(), threading.Event(), threading.Event()
    requests = build_requests(fed, faulty)
    sender = Sender(url, (WRITER, PASSWORD), run.errors)
    start = time.time() + 1.0

    def feeding() -> None:
        try:
            run_feed(
                sender, requests, start=start, duration_s=args.duration_s, interval_s=INTERVAL_S,
                shards=SHARDS, xid_scrape=math.ceil(args.duration_s / 2 / INTERVAL_S),
                log=run.feed, stop=stop, spread=not args.burst,
            )  # fmt: skip
        finally:
            feed_ended.set()

    def watching() -> None:
        sent = lambda: run.feed.xid_stamp_ms  # noqa: E731
        host, gpu = fed[faulty].host, fed[faulty].gpu
        run.drain_at.append(
            watch_drain(url, host, gpu, sent, DRAIN_WITHIN_S, run.errors, feed_ended)
        )

    feed, watch = spawn(feeding), spawn(watching)
    others = [spawn(sampler, url, pid, start, SAMPLE_EVERY_S, run.samples, run.errors, stop)]
    while not run.feed.finished_s and not feed_ended.wait(0.5):
        pass  # the clients start once the first scrape is in, as on a running cluster
    nodes = sorted({g.instance for g in fed})
    for i in range(args.dashboards):
        node = nodes[i * len(nodes) // args.dashboards]
        offset_s = DASHBOARD_EVERY_S * i / args.dashboards
        others.append(
            spawn(dashboard_client, url, node, DASHBOARD_EVERY_S, offset_s, run.latencies,
                  run.errors, stop)
        )  # fmt: skip
    others.append(spawn(bi_client, pg_port, BI_EVERY_S, run.latencies, run.errors, stop))
    feed.join()  # the feed ends the run
    stop.set()
    for thread in others:
        thread.join(timeout=300)
    watch.join(timeout=DRAIN_WITHIN_S + 60)
    return run, start


def soak(db: str, gpus: int, args: argparse.Namespace, built_s: float | None) -> Soak:
    for user, role in ((READER, "reader"), (WRITER, "writer")):
        wanka(db, "user", "add", user, "--role", role, "--password-stdin", stdin=PASSWORD + "\n")
    fed = demo_gpus(db, gpus)
    faulty = pick_faulty(db, fed)
    pg_port = free_port()
    process, url = start_server(
        db, "--pg-port", str(pg_port), "--log-level", args.server_log_level
    )  # the server's log is the benchmark's stderr
    try:
        with httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=60) as client:
            drained_before = drain_shown(client, fed[faulty].host, fed[faulty].gpu)
        run, start = drive(url, process.pid, pg_port, fed, faulty, args)
        if process.poll() is not None:
            raise SystemExit(f"the server died (exit status {process.returncode})")
        stored = count_stored(url, list(run.feed.answered)) if run.feed.answered else {}
        refreshes = refreshes_since(url, start - 1.0)
    finally:
        process.terminate()
        process.wait(timeout=120)
    if drained_before:
        run.errors.add("setup", "the GPU to fail showed drain before its XID")
    for name, (_, failed) in refreshes.items():
        for _ in range(failed):
            run.errors.add("scheduler", f"refresh of {name} failed")
    result = Soak(
        gpus=len(fed), duration_s=args.duration_s, interval_s=INTERVAL_S, shards=SHARDS,
        dashboards=args.dashboards, feed=run.feed, latencies=run.latencies,
        samples=run.samples, errors=run.errors, xid_gpu=(fed[faulty].host, fed[faulty].gpu),
        drain_at=run.drain_at[0] if run.drain_at else None, stored=stored, refreshes=refreshes,
        built_s=built_s,
    )  # fmt: skip
    judge(result)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--duration-s", type=float, default=3600)
    parser.add_argument("--also-gpus", type=int, default=2_500, help="then this size (0: none)")
    parser.add_argument("--db", help="the demo of --gpus built before (it gains two users)")
    parser.add_argument("--dashboards", type=int, default=4, help="Grafana users, one node each")
    parser.add_argument(
        "--burst", action="store_true", help="send each scrape at once, not spread over 15 s"
    )
    parser.add_argument(
        "--server-log-level", default="warning", choices=["debug", "info", "warning", "error"],
        help="what the server logs to stderr (info: each slow upkeep job and write gate hold)",
    )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200 GPUs, 120 s")
    args = parser.parse_args()
    if args.quick:
        args.gpus, args.duration_s, args.also_gpus = 200, 120.0, 0
    soaks = []
    for i, gpus in enumerate([args.gpus, args.also_gpus] if args.also_gpus else [args.gpus]):
        with tempfile.TemporaryDirectory(prefix="wanka-soak-") as tmp:
            db = args.db if args.db and i == 0 else str(Path(tmp) / "demo.duckdb")
            print(f"building the demo of {gpus:,} GPUs ...", file=sys.stderr, flush=True)
            built_s = build(db, gpus)
            print(
                f"soaking {gpus:,} GPUs for {args.duration_s:g} s ...", file=sys.stderr, flush=True
            )
            soaks.append(soak(db, gpus, args, built_s))
        report(soaks[-1])
    print_verdicts(soaks)


if __name__ == "__main__":
    main()
