"""bench_promql's other stores: a real Prometheus 2.42 and a real VictoriaMetrics 1.79 (Debian's),
each started on a loopback port in its own folder, and how to wait until each holds what it
was sent."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx

from bench.serving import free_port, wait_ready


def _start(
    name: str, args: list[str], ready: str, folder: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """Start `name` with `args` ({port} filled in), logging to its file in `folder`; its URL
    once `ready` answers."""
    port = free_port()
    process = subprocess.Popen(
        [name, *(a.format(port=port) for a in args)],
        stdout=subprocess.DEVNULL,
        stderr=(folder / f"{name}.log").open("wb"),
    )
    url = f"http://127.0.0.1:{port}"
    wait_ready(process, f"{url}{ready}", name)
    return process, url


def start_prometheus(
    folder: Path, rule_file: Path | None = None, evaluation_interval_s: int = 60
) -> tuple[subprocess.Popen[bytes], str]:
    """Prometheus over an empty TSDB in `folder`; evaluating `rule_file` when given."""
    config = folder / "prometheus.yml"
    rules = f"rule_files: [{rule_file}]\n" if rule_file is not None else ""
    config.write_text(
        f"global:\n  scrape_interval: 1h\n  evaluation_interval: {evaluation_interval_s}s\n"
        f"{rules}scrape_configs: []\n"
    )
    args = [
        f"--config.file={config}",
        f"--storage.tsdb.path={folder / 'tsdb'}",
        "--storage.tsdb.retention.time=30d",
        "--web.listen-address=127.0.0.1:{port}",
        "--web.enable-remote-write-receiver",
        "--query.max-samples=500000000",
        "--log.level=warn",
    ]
    return _start("prometheus", args, "/-/ready", folder)


def start_victoria(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    args = [
        f"-storageDataPath={folder / 'victoria'}",
        "-httpListenAddr=127.0.0.1:{port}",
        "-retentionPeriod=100y",
        "-search.disableCache",
        "-search.maxQueryDuration=600s",
        "-loggerLevel=WARN",
    ]
    return _start("victoria-metrics", args, "/health", folder)


def victoria_metric(victoria: str, name: str, labels: str = "") -> float:
    """The sum of a metric of VictoriaMetrics' /metrics over the lines whose labels start so."""
    total = 0.0
    for line in httpx.get(f"{victoria}/metrics", timeout=30).text.splitlines():
        if line.startswith(name + "{" + labels) or (not labels and line.startswith(name + " ")):
            total += float(line.rsplit(" ", 1)[1])
    return total


def settle_victoria(victoria: str, timeout_s: float = 300) -> str:
    """Wait until VictoriaMetrics runs no merge (three polls 2 s apart) after its flush."""
    started = time.monotonic()
    idle = 0
    while idle < 3 and time.monotonic() - started < timeout_s:
        time.sleep(2)  # waiting for its background merges, not timing anything
        busy = victoria_metric(victoria, "vm_active_merges")
        idle = 0 if busy else idle + 1
    rows = victoria_metric(victoria, "vm_rows", 'type="storage/')
    return f"{int(rows):,} rows, merges settled in {time.monotonic() - started:.0f} s"


def settle(prometheus: str, span_ms: int, timeout_s: float = 240) -> str:
    """Wait until Prometheus has compacted what a live server would have (head ≤ 3 h)."""
    deadline = time.monotonic() + timeout_s
    while True:
        stats = httpx.get(f"{prometheus}/api/v1/status/tsdb", timeout=30).json()["data"]
        head = stats["headStats"]
        held_h = (int(head["maxTime"]) - int(head["minTime"])) / 3_600_000
        if span_ms <= 3 * 3_600_000 or held_h <= 3.01 or time.monotonic() > deadline:
            return f"head holds {held_h:.1f} h, {head['numSeries']:,} series"
        time.sleep(2)  # waiting for its compaction loop, not timing anything
