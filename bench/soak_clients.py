"""bench_soak.py's clients beside the feed: Grafana dashboards, a BI tool, the memory and lag
sampler, and the watch for a drained GPU in GET /v1/health. Each runs in its own thread until
`stop`, records what it saw, and counts every non-2xx answer and exception in `Errors`."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
from load_clients import rss_kib

from bench.bench_promql import DASHBOARD, grafana_regex

READER, WRITER, PASSWORD = "soak-reader", "soak-prom", "soak-pw-1"
#: What a BI tool's dashboard asks every refresh: dynamic tables and base tables.
BI_QUERIES = (
    "SELECT n.cluster, round(avg(m.value), 1) AS util_pct FROM gpu_metrics m JOIN nodes n "
    "USING (host) WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL' AND m.ts > now() - INTERVAL 10 MINUTE "
    "GROUP BY 1 ORDER BY 1",
    "SELECT host, avg(util_pct) AS util FROM gpu_hourly_host GROUP BY 1 ORDER BY 2 DESC LIMIT 10",
    "SELECT * FROM energy_cluster_daily ORDER BY day DESC, cluster LIMIT 20",
    "SELECT rule, count(*) AS gpus FROM health_findings WHERE current GROUP BY 1 ORDER BY 2 DESC",
    "SELECT model, sum(xid_samples) AS xids FROM xid_errors_by_model GROUP BY 1",
    "SELECT state, count(*) AS jobs FROM jobs GROUP BY state ORDER BY jobs DESC",
)
_METRIC = re.compile(r'^(\w+)(?:\{(?:\w+="([^"]*)")?[^}]*\})? (\S+)$')
_AGGREGATE = re.compile(r"^(avg|sum|min|max|count)\s*\(")


class Errors:
    """Errors by (face, kind), with the first message of each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[tuple[str, str]] = Counter()
        self.first: dict[tuple[str, str], str] = {}

    def add(self, face: str, kind: str, message: str = "") -> None:
        with self.lock:
            self.counts[face, kind] += 1
            self.first.setdefault((face, kind), message[:200])


def dashboard_panels() -> list[tuple[str, str]]:
    """(title, expression) of every panel of NVIDIA's dcgm-exporter dashboard (read from
    ../shared/data, or WANKA_SHARED_DATA), its `$instance` and `$gpu` still to fill."""
    shared = os.environ.get("WANKA_SHARED_DATA")
    path = Path(shared) / "grafana" / DASHBOARD.name if shared else DASHBOARD
    if not path.is_file():
        raise SystemExit(f"bench_soak needs NVIDIA's Grafana dashboard at {path}")
    board = json.loads(path.read_text(encoding="utf-8"))
    return [(p["title"], t["expr"]) for p in board["panels"] for t in p.get("targets", [])]


def fleet_panels(panels: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The fleet view: the dashboard's aggregate panels as they are (variables set to All),
    and the fleet average of each field only shown per GPU.

    >>> fleet_panels([("T", 'X{gpu=~"$gpu"}'), ("Avg T", 'avg(X{gpu=~"$gpu"})'), ("U", "Y{}")])
    [('Avg T', 'avg(X{gpu=~"$gpu"})'), ('U, fleet average', 'avg(Y)')]
    """
    aggregates = [(t, e) for t, e in panels if _AGGREGATE.match(e)]
    covered = {re.search(r"\((\w+)", e)[1] for _, e in aggregates}  # type: ignore[index]
    averages = []
    for title, expression in panels:
        metric = re.match(r"\w+", expression)
        if metric and not _AGGREGATE.match(expression) and metric[0] not in covered:
            covered.add(metric[0])
            averages.append((f"{title}, fleet average", f"avg({metric[0]})"))
    return aggregates + averages


@dataclass
class Latencies:
    node_s: list[float] = field(default_factory=list)
    fleet_s: list[float] = field(default_factory=list)
    load_s: list[float] = field(default_factory=list)  # the variables, at dashboard load
    bi_s: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, seconds: float) -> None:
        with self.lock:
            getattr(self, kind).append(seconds)


def _window(span_s: int = 3600, step_s: int = 30) -> dict[str, int]:
    """The last `span_s`, its ends on the step, as Grafana asks."""
    end = int(time.time()) // step_s * step_s
    return {"start": end - span_s, "end": end, "step": step_s}


def _timed(client: httpx.Client, path: str, params: dict[str, object], errors: Errors) -> float:
    """Seconds to the last byte of a POST form (Grafana's method); NaN on an error."""
    started = time.perf_counter()
    try:
        answer = client.post(path, data=params)
        body = answer.content
    except httpx.HTTPError as error:
        errors.add("dashboard", type(error).__name__, str(error))
        return float("nan")
    took = time.perf_counter() - started
    try:
        status = answer.json().get("status") if answer.status_code == 200 else None
    except ValueError:
        status = None
    if status != "success":
        errors.add("dashboard", f"HTTP {answer.status_code}", body[:200].decode(errors="replace"))
        return float("nan")
    return took


def dashboard_client(
    url: str, instance: str, every_s: float, offset_s: float, out: Latencies, errors: Errors,
    stop: threading.Event,
) -> None:  # fmt: skip
    """One person's dcgm-exporter dashboard on one node (`instance`), refreshed every `every_s`:
    the variables at load, then every panel for that node and the fleet view, 6 at a time
    (a browser's connections to one host), over the last hour at a 30 s step."""
    panels = dashboard_panels()
    if stop.wait(offset_s):
        return
    with (
        httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=120) as client,
        ThreadPoolExecutor(6) as pool,
    ):
        every = {}
        for name in ("instance", "gpu"):
            path, window = f"/api/v1/label/{name}/values", _window()
            params = {"match[]": "DCGM_FI_DEV_GPU_TEMP", "start": window["start"],
                      "end": window["end"]}  # fmt: skip
            started = time.perf_counter()
            try:
                every[name] = client.get(path, params=params).raise_for_status().json()["data"]
            except httpx.HTTPError as error:
                errors.add("dashboard", type(error).__name__, str(error))
                every[name] = [".*"]
            out.add("load_s", time.perf_counter() - started)
        node = {"instance": grafana_regex([instance]), "gpu": grafana_regex(every["gpu"])}
        fleet = {name: grafana_regex(values) for name, values in every.items()}
        asked = [("node_s", _fill(e, node)) for _, e in panels]
        asked += [("fleet_s", _fill(e, fleet)) for _, e in fleet_panels(panels)]
        next_at = time.monotonic()
        while not stop.is_set():
            window = _window()
            params = [{"query": expression, **window} for _, expression in asked]
            took = pool.map(lambda p: _timed(client, "/api/v1/query_range", p, errors), params)
            for (kind, _), seconds in zip(asked, took, strict=True):
                if seconds == seconds:  # not NaN
                    out.add(kind, seconds)
            next_at = max(next_at + every_s, time.monotonic())  # late: no burst to catch up
            stop.wait(max(0.0, next_at - time.monotonic()))


def _fill(expression: str, values: dict[str, str]) -> str:
    for name, pattern in values.items():
        expression = expression.replace(f"${name}", pattern)
    return expression


def bi_client(pg_port: int, every_s: float, out: Latencies, errors: Errors, stop: threading.Event):
    """A BI tool over the PostgreSQL wire, refreshing its dashboard every `every_s`."""
    dsn = f"host=127.0.0.1 port={pg_port} dbname=wanka user={READER} password={PASSWORD}"
    conn: psycopg.Connection[tuple[object, ...]] | None = None
    next_at = time.monotonic()
    while not stop.is_set():
        for sql in BI_QUERIES:
            started = time.perf_counter()
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(dsn, autocommit=True, connect_timeout=60)
                conn.execute(sql, prepare=False).fetchall()
            except psycopg.Error as error:
                errors.add("bi (pgwire)", type(error).__name__, str(error))
                continue
            out.add("bi_s", time.perf_counter() - started)
        next_at = max(next_at + every_s, time.monotonic())  # late: no burst to catch up
        stop.wait(max(0.0, next_at - time.monotonic()))
    if conn is not None:
        conn.close()


@dataclass
class Samples:
    """The server every `every_s`: seconds from the start, RSS, DuckDB's buffer manager, and
    each dynamic table's lag and freshness target (its /metrics gauges)."""

    at_s: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    #: Of the RSS, from /proc/PID/smaps_rollup: anonymous memory, and what of it the
    #: allocators gave back lazily (MADV_FREE: counted until the kernel needs the pages).
    anon_kib: list[int] = field(default_factory=list)
    lazyfree_kib: list[int] = field(default_factory=list)
    arrow_bytes: list[float] = field(default_factory=list)  # Arrow's default pool, allocated
    duckdb_bytes: list[float] = field(default_factory=list)
    python_blocks: list[float] = field(default_factory=list)  # objects Python's allocator holds
    #: dead entries of DuckDB's eviction queues (each holds a freed buffer's handle)
    dead_nodes: list[float] = field(default_factory=list)
    #: The last /metrics read: DuckDB's buffer manager by tag (what holds its memory).
    duckdb_tags: dict[str, float] = field(default_factory=dict)
    lag_s: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # (at, lag)
    target_s: dict[str, float] = field(default_factory=dict)
    #: The last /metrics read: seconds each writer kind held / waited for the write gate, and
    #: remote_write's transactions and the requests they stored.
    gate_held_s: dict[str, float] = field(default_factory=dict)
    gate_wait_s: dict[str, float] = field(default_factory=dict)
    commits: tuple[float, float] = (0.0, 0.0)
    #: At each sample, the seconds each writer kind had held the gate so far.
    gate_held_at: list[dict[str, float]] = field(default_factory=list)


def rollup_kib(pid: int) -> dict[str, int]:
    """The kB fields of /proc/PID/smaps_rollup (empty where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            lines = rollup.read().splitlines()[1:]
    except OSError:
        return {}
    return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in lines)}


def sampler(
    url: str, pid: int, start: float, every_s: float, samples: Samples, errors: Errors,
    stop: threading.Event,
) -> None:  # fmt: skip
    with httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=60) as client:
        while not stop.wait(every_s):
            try:
                text = client.get("/metrics").raise_for_status().text
            except httpx.HTTPError as error:
                errors.add("/metrics", type(error).__name__, str(error))
                continue
            at = time.time() - start
            samples.duckdb_tags = {}
            duckdb, arrow = _read_metrics(text, at, samples)
            samples.at_s.append(at)
            samples.rss_kib.append(rss_kib(pid))
            parts = rollup_kib(pid)
            samples.anon_kib.append(parts.get("Anonymous", 0))
            samples.lazyfree_kib.append(parts.get("LazyFree", 0))
            samples.duckdb_bytes.append(duckdb)
            samples.arrow_bytes.append(arrow)
            samples.gate_held_at.append(dict(samples.gate_held_s))


def _read_metrics(text: str, at: float, samples: Samples) -> tuple[float, float]:
    """Note what `samples` keeps of one /metrics text read at `at`; the bytes DuckDB's buffer
    manager and Arrow's pool hold."""
    duckdb = arrow = 0.0
    dead: float | None = None
    for line in text.splitlines():
        found = _METRIC.match(line)
        if not found:
            continue
        name, label, value = found.groups()
        if name == "wanka_duckdb_memory_bytes":
            duckdb += float(value)
            samples.duckdb_tags[label or ""] = float(value)
        elif name == "wanka_python_allocated_blocks":
            samples.python_blocks.append(float(value))
        elif name == "wanka_arrow_memory_bytes":
            arrow += float(value)
        elif name == "wanka_duckdb_eviction_queue_nodes" and 'state="dead"' in line:
            dead = (dead or 0.0) + float(value)
        elif label:
            _note_labelled(name, label, float(value), at, samples)
        elif name == "wanka_remote_write_commits_total":
            samples.commits = (float(value), samples.commits[1])
        elif name == "wanka_remote_write_committed_requests_total":
            samples.commits = (samples.commits[0], float(value))
    if dead is not None:
        samples.dead_nodes.append(dead)
    return duckdb, arrow


def _note_labelled(name: str, label: str, value: float, at: float, samples: Samples) -> None:
    """A series by table or by writer, read at `at`."""
    if name == "wanka_dynamic_table_lag_seconds":
        samples.lag_s.setdefault(label, []).append((at, value))
    elif name == "wanka_dynamic_table_freshness_target_seconds":
        samples.target_s[label] = value
    elif name == "wanka_write_gate_held_seconds_total":
        samples.gate_held_s[label] = value
    elif name == "wanka_write_gate_wait_seconds_total":
        samples.gate_wait_s[label] = value


def drain_shown(client: httpx.Client, host: str, gpu: int) -> bool:
    """Whether GET /v1/health shows the GPU as `drain` by `xid_drain`."""
    report = client.get("/v1/health").raise_for_status().json()
    return any(
        g["host"] == host and g["gpu"] == gpu and g["state"] == "drain"
        and any(r["rule"] == "xid_drain" for r in g["rules"])
        for g in report["gpus"]
    )  # fmt: skip


def watch_drain(
    url: str, host: str, gpu: int, sent_ms: Callable[[], int | None], within_s: float,
    errors: Errors, feed_ended: threading.Event,
) -> float | None:  # fmt: skip
    """Once the XID sample is sent (`sent_ms()` gives its time), poll GET /v1/health every
    second: when the GPU showed `drain` (time.time()), or None `within_s` after the sample
    (or when the feed ended without sending it)."""
    while True:
        ended = feed_ended.is_set()  # before looking: the feed stamps the XID, then ends
        stamp_ms = sent_ms()
        if stamp_ms is not None:
            break
        if ended:
            return None
        time.sleep(0.5)  # polling for the feed, not timing anything
    deadline = stamp_ms / 1000 + within_s
    with httpx.Client(base_url=url, auth=(READER, PASSWORD), timeout=60) as client:
        while time.time() < deadline:
            try:
                if drain_shown(client, host, gpu):
                    return time.time()
            except httpx.HTTPError as error:
                errors.add("/v1/health", type(error).__name__, str(error))
            time.sleep(1.0)
    return None
