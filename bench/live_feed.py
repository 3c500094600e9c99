"""`bench_load.py --live-feed`: a real `wanka serve` fed by remote_write as a Prometheus
scraping dcgm-exporter on every node would feed it, and the lag from scrape to queryable.

Every `--interval-s` (15 s) one scrape of GPUs × 40 fields (400,000 samples at 10,000 GPUs)
is sent as Prometheus sends it: 2,000 samples per request, snappy, over `--shards` concurrent
connections. A sample is queryable once its request is answered (wanka answers after the commit);
its lag is that moment less the scrape's timestamp. After each scrape a query checks that all of
its samples are there. The server's RSS is sampled after every scrape (memory must stay flat).

The requests are built once (bench_remote_write's dcgm-exporter label sets), then each scrape
rewrites the timestamp bytes in place (the same width), so the sender costs little of the CPU.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cramjam
import httpx
from bench_remote_write import FIELDS, PER_REQUEST, labels_of
from load_clients import rss_kib
from serving import start_server, wanka

from warehouse.remote_write.messages import WriteRequest

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}
PLACEHOLDER_MS = 1_700_000_000_000  # a 6-byte varint, as every ms timestamp until 2248


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def raw_requests(gpus: int) -> list[bytes]:
    """The uncompressed requests of one scrape, stamped PLACEHOLDER_MS."""
    bodies, request, n = [], WriteRequest(), 0
    for gpu in range(gpus):
        for f, field in enumerate(FIELDS):
            one = request.timeseries.add()
            for name, value in labels_of(gpu, field):
                one.labels.add(name=name, value=value)
            one.samples.add(timestamp=PLACEHOLDER_MS, value=float((gpu * 31 + f * 7) % 1000))
            n += 1
            if n == PER_REQUEST:
                bodies.append(request.SerializeToString())
                request, n = WriteRequest(), 0
    if n:
        bodies.append(request.SerializeToString())
    return bodies


def run_live_feed(gpus: int, duration_s: float, interval_s: float, shards: int) -> None:
    print(f"building {gpus * len(FIELDS):,} series ...", flush=True)
    raws = raw_requests(gpus)
    old = b"\x10" + _varint(PLACEHOLDER_MS)
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "live.duckdb")
        wanka(db, "user", "add", "prom", "--role", "writer", "--password-stdin", stdin="pw")
        wanka(db, "user", "add", "ada", "--role", "admin", "--password-stdin", stdin="pw")
        process, url = start_server(db, "--pg-port", "0")
        lags: list[float] = []
        per_scrape: list[tuple[int, float, float, float, int, float]] = []
        local = threading.local()

        def client() -> httpx.Client:
            if not hasattr(local, "client"):
                local.client = httpx.Client(base_url=url, auth=("prom", "pw"), timeout=120)
            made: httpx.Client = local.client
            return made

        def send(body: bytes, stamp_s: float) -> float:
            for _ in range(20):  # as Prometheus retries a 5xx (a busy server)
                answer = client().post("/api/v1/write", content=body, headers=HEADERS)
                if answer.status_code == 204:
                    return time.time() - stamp_s
                if answer.status_code < 500:
                    raise RuntimeError(f"{answer.status_code}: {answer.text}")
                time.sleep(0.2)
            raise RuntimeError("gave up after 20 tries")

        admin = httpx.Client(base_url=url, auth=("ada", "pw"), timeout=120)
        try:
            began = time.monotonic()
            scrape = 0
            with ThreadPoolExecutor(shards) as pool:
                while time.monotonic() - began < duration_s:
                    due = began + scrape * interval_s
                    time.sleep(max(due - time.monotonic(), 0))
                    stamp_ms = int(time.time() * 1000)
                    new = b"\x10" + _varint(stamp_ms)
                    bodies = [bytes(cramjam.snappy.compress_raw(r.replace(old, new))) for r in raws]
                    got = list(pool.map(send, bodies, [stamp_ms / 1000] * len(bodies)))
                    lags += got
                    answer = admin.post(
                        "/v1/query",
                        json={
                            "sql": "SELECT count(*) FROM gpu_metrics "
                            f"WHERE ts = make_timestamptz({stamp_ms * 1000})"
                        },
                    )
                    stored = answer.json()["rows"][0][0]
                    per_scrape.append(
                        (
                            scrape,
                            min(got),
                            statistics.median(got),
                            max(got),
                            stored,
                            rss_kib(process.pid) / 1024,
                        )
                    )
                    s = per_scrape[-1]
                    print(
                        f"scrape {s[0]}: lag min {s[1]:.2f} s, median {s[2]:.2f} s, "
                        f"max {s[3]:.2f} s; {s[4]:,} samples queryable; RSS {s[5]:,.0f} MB",
                        flush=True,
                    )
                    scrape += 1
        finally:
            admin.close()
            process.terminate()
            process.wait(timeout=60)
    _report(gpus, interval_s, shards, lags, per_scrape)


def _report(
    gpus: int,
    interval_s: float,
    shards: int,
    lags: list[float],
    per_scrape: list[tuple[int, float, float, float, int, float]],
) -> None:
    samples = gpus * len(FIELDS)
    steady = per_scrape[1:] or per_scrape  # the first fills the series dictionary
    steady_lags = lags[len(lags) // len(per_scrape) :] if len(per_scrape) > 1 else lags
    print()
    print(f"live feed: {gpus:,} GPUs × {len(FIELDS)} fields = {samples:,} samples every "
          f"{interval_s:g} s, {PER_REQUEST:,} per request over {shards} connections; "
          f"{len(per_scrape)} scrapes")  # fmt: skip
    print()
    print("| | value |")
    print("|---|---:|")
    print(f"| lag, scrape to queryable, median (scrapes after the first) | "
          f"{statistics.median(steady_lags):.2f} s |")  # fmt: skip
    print(f"| lag p90 | {statistics.quantiles(steady_lags, n=10)[-1]:.2f} s |")
    print(f"| lag of the first scrape (new series), median | {per_scrape[0][2]:.2f} s |")
    print(f"| every scrape's samples queryable | {all(s[4] == samples for s in per_scrape)} |")
    rss = [s[5] for s in steady]
    print(f"| server RSS after scrape 2 / last / max | {rss[0]:,.0f} / {rss[-1]:,.0f} / "
          f"{max(rss):,.0f} MB |")  # fmt: skip
    median = statistics.median(steady_lags)
    print()
    print(f"median lag ≤ 2 s: {'yes' if median <= 2 else 'NO'} ({median:.2f} s)")
