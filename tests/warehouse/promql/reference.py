"""The same samples in a real Prometheus 2.42 and in wanka, and the two answers compared.

`cluster()` makes an hour of dcgm-exporter-shaped series (label sets as dcgm-exporter 3.x
sends them, pod labels on some GPUs, scrape jitter, a GPU that goes away and comes back, a
counter reset, NaN readings, node_exporter series beside them). `Reference` loads them into
Prometheus with `promtool tsdb create-blocks-from openmetrics` and serves its query API;
`load_wanka` stores them through the remote_write path. `differences` says, per query, what
differs: series missing on either side, timestamps, values beyond 1e-9 relative.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.warehouse.remote_write.support import body
from warehouse.ingest.batch import read_context
from warehouse.ingest.models import ModelNames
from warehouse.kernel.engine import Engine
from warehouse.remote_write.decode import decode
from warehouse.remote_write.rows import Limits, SeriesCache
from warehouse.tsdb.append import append

Labels = tuple[tuple[str, str], ...]
Samples = list[tuple[int, float]]
Series = tuple[Labels, Samples]

HOSTS, GPUS = 4, 4
STEP_MS = 15_000
SPAN_MS = 3_600_000
#: T0: a whole hour, three hours back (Prometheus keeps what promtool wrote: retention 100y)
T0 = (int(time.time() * 1000) // 3_600_000 - 3) * 3_600_000
T_END = T0 + SPAN_MS

GAUGES = {
    "DCGM_FI_DEV_GPU_TEMP": (30.0, 85.0),
    "DCGM_FI_DEV_MEMORY_TEMP": (30.0, 90.0),
    "DCGM_FI_DEV_POWER_USAGE": (60.0, 700.0),
    "DCGM_FI_DEV_SM_CLOCK": (210.0, 1980.0),
    "DCGM_FI_DEV_MEM_CLOCK": (1593.0, 2619.0),
    "DCGM_FI_DEV_GPU_UTIL": (0.0, 100.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": (0.0, 100.0),
    "DCGM_FI_DEV_FB_USED": (0.0, 81559.0),
    "DCGM_FI_DEV_FB_FREE": (0.0, 81559.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.0, 1.0),
    "DCGM_FI_PROF_SM_ACTIVE": (0.0, 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": (0.0, 1.0),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": (0.0, 4.5e11),
    "DCGM_FI_PROF_PCIE_RX_BYTES": (0.0, 6.4e10),
}
COUNTERS = {
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 700_000.0,  # mJ per 15 s at most
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": 3.0e6,
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": 0.0,
}
EVENTS = ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
PODS = {(0, 0): ("train-llm-0", "research"), (0, 1): ("train-llm-0", "research"),
        (1, 2): ("infer-7f9c", "serving")}  # fmt: skip


def gpu_labels(host: int, gpu: int, metric: str) -> Labels:
    labels = {
        "__name__": metric,
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
        "Hostname": f"gpu-node-{host:02d}",
        "UUID": f"GPU-{host:04x}{gpu:04x}-6d1c-11ef-9b2f-0242ac120002",
        "device": f"nvidia{gpu}",
        "gpu": str(gpu),
        "instance": f"10.0.0.{host + 10}:9400",
        "job": "dcgm-exporter",
        "modelName": "NVIDIA H100 80GB HBM3" if host < 3 else "NVIDIA A100-SXM4-80GB",
        "pci_bus_id": f"00000000:{0x18 + gpu * 0x10:02X}:00.0",
    }
    if (host, gpu) in PODS:
        pod, namespace = PODS[(host, gpu)]
        labels.update(pod=pod, namespace=namespace, container="main")
    return tuple(sorted(labels.items()))


def _times(rng: random.Random, host: int, gpu: int) -> list[int]:
    """Scrape times with a steady per-target phase and some jitter; GPU 3 of host 2 is gone
    for 12 minutes in the middle (longer than the 5-minute lookback)."""
    phase = rng.randrange(0, STEP_MS)
    times = []
    for i in range(SPAN_MS // STEP_MS):
        ts = T0 + i * STEP_MS + phase + rng.randrange(-40, 40)
        if (host, gpu) == (2, 3) and T0 + 1_500_000 <= ts < T0 + 2_220_000:
            continue
        times.append(ts)
    return times


def _gauges(rng: random.Random, host: int, gpu: int, times: list[int]) -> Iterator[Series]:
    for metric, (lo, hi) in GAUGES.items():
        level = rng.uniform(lo, hi)
        values = []
        for _ in times:
            level = min(hi, max(lo, level + rng.gauss(0, (hi - lo) / 20)))
            values.append(round(level, 3))
        if metric == "DCGM_FI_DEV_GPU_TEMP" and (host, gpu) == (3, 1):
            values[40] = values[41] = math.nan  # a reading that failed
        yield gpu_labels(host, gpu, metric), list(zip(times, values, strict=True))


def _counters(rng: random.Random, host: int, gpu: int, times: list[int]) -> Iterator[Series]:
    for metric, most in COUNTERS.items():
        total, values = rng.uniform(0, 1e9) if most else 0.0, []
        for i, _ in enumerate(times):
            if metric.endswith("SBE_VOL_TOTAL"):
                total += 1.0 if (host, gpu) == (1, 1) and i % 17 == 0 else 0.0
            else:
                total += rng.uniform(0, most)
            if (host, gpu) == (0, 2) and i == 130:
                total = rng.uniform(0, most)  # the exporter restarted: a reset
            values.append(round(total, 1))
        yield gpu_labels(host, gpu, metric), list(zip(times, values, strict=True))


def _events(host: int, gpu: int, times: list[int]) -> Iterator[Series]:
    """XID and throttle gauges: last-value codes, set on two GPUs twice, cleared after."""
    for metric in EVENTS:
        code, values = 0.0, []
        for i, _ in enumerate(times):
            if (host, gpu) in ((1, 3), (3, 0)) and i in (60, 61, 62, 150):
                code = 79.0 if metric.endswith("XID_ERRORS") else 4.0
            elif i in (63, 151):
                code = 0.0
            values.append(code)
        yield gpu_labels(host, gpu, metric), list(zip(times, values, strict=True))


def _node(rng: random.Random, host: int) -> Iterator[Series]:
    """node_exporter's series of a host: `up` (down for 10 scrapes on host 3), CPU counters."""
    times = _times(rng, host, -1)
    instance = ("instance", f"10.0.0.{host + 10}:9100")
    yield (
        (("__name__", "up"), instance, ("job", "node")),
        [(t, 0.0 if host == 3 and 100 <= i < 110 else 1.0) for i, t in enumerate(times)],
    )
    for mode in ("idle", "user", "system"):
        total, values = 0.0, []
        for _ in times:
            total += rng.uniform(0, 15 if mode == "idle" else 4)
            values.append(round(total, 2))
        labels = (("__name__", "node_cpu_seconds_total"), ("cpu", "0"), instance,
                  ("job", "node"), ("mode", mode))  # fmt: skip
        yield labels, list(zip(times, values, strict=True))


def cluster(seed: int = 7) -> dict[Labels, Samples]:
    rng = random.Random(seed)
    series: dict[Labels, Samples] = {}
    for host in range(HOSTS):
        for gpu in range(GPUS):
            times = _times(rng, host, gpu)
            series.update(_gauges(rng, host, gpu, times))
            series.update(_counters(rng, host, gpu, times))
            series.update(_events(host, gpu, times))
        series.update(_node(rng, host))
    return series


def openmetrics(series: dict[Labels, Samples]) -> str:
    """The samples as an OpenMetrics exposition (timestamps in seconds), one family each."""
    lines: list[str] = []
    families: dict[str, list[Labels]] = {}
    for labels in series:
        families.setdefault(dict(labels)["__name__"], []).append(labels)
    for name, members in families.items():
        lines.append(f"# TYPE {name} unknown")
        for labels in members:
            text = ",".join(f'{k}="{json.dumps(v)[1:-1]}"' for k, v in labels if k != "__name__")
            for ts, value in series[labels]:
                number = "NaN" if math.isnan(value) else repr(value)
                lines.append(f"{name}{{{text}}} {number} {ts / 1000:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def load_wanka(eng: Engine, series: dict[Labels, Samples]) -> None:
    """Store the samples through the remote_write path, 2,000 samples a request."""
    cache = SeriesCache(ModelNames(read_context(eng).model_names))
    entries = [(list(labels), samples) for labels, samples in series.items()]
    chunk: list[tuple[list[tuple[str, str]], Samples]] = []
    size = 0
    for labels, samples in entries:
        for i in range(0, len(samples), 500):
            chunk.append((labels, samples[i : i + 500]))
            size += len(samples[i : i + 500])
            if size >= 2_000:
                append(eng.cursor(), decode(body(chunk), cache, Limits()), cache=cache)
                chunk, size = [], 0
    if chunk:
        append(eng.cursor(), decode(body(chunk), cache, Limits()), cache=cache)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Reference:
    """A real Prometheus serving the samples from its TSDB."""

    client: httpx.Client
    process: subprocess.Popen[bytes]

    def query(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.client.get(path, params=params)
        return dict(answer.json())


def available() -> bool:
    return shutil.which("prometheus") is not None and shutil.which("promtool") is not None


def start(folder: Path, series: dict[Labels, Samples]) -> Iterator[Reference]:
    """Prometheus over blocks promtool made from `series` (a generator: stops it after)."""
    exposition = folder / "cluster.om"
    exposition.write_text(openmetrics(series))
    tsdb = folder / "tsdb"
    made = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(exposition), str(tsdb)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = free_port()
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tsdb}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/-/ready").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "prometheus did not start"
            time.sleep(0.2)  # polling its readiness
        yield Reference(client, process)
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _close(a: str, b: str) -> bool:
    if a == b:
        return True
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


def _points(entry: dict[str, Any]) -> list[list[Any]]:
    return entry["values"] if "values" in entry else [entry["value"]]


def shape(answer: dict[str, Any]) -> str:
    """error, empty, or the result type with its number of points (a summary for the report)."""
    if answer.get("status") != "success":
        return "error"
    data = answer["data"]
    kind = str(data["resultType"])
    if kind in ("scalar", "string"):
        return kind
    points = sum(len(_points(e)) for e in data["result"])
    return f"{kind} ({'1' if points == 1 else 'many'} points)" if points else "empty"


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """What differs between two query API answers (empty: equal)."""
    if theirs.get("status") != "success" or ours.get("status") != "success":
        if theirs.get("status") == ours.get("status"):
            return []  # both refused it
        return [f"prometheus: {theirs.get('error', 'ok')}; wanka: {ours.get('error', 'ok')}"]
    a, b = ours["data"], theirs["data"]
    if a["resultType"] != b["resultType"]:
        return [f"resultType {a['resultType']} vs prometheus {b['resultType']}"]
    if a["resultType"] in ("scalar", "string"):
        same = a["result"][0] == b["result"][0] and _close(a["result"][1], b["result"][1])
        return [] if same else [f"{a['result']} vs prometheus {b['result']}"]
    mine = {json.dumps(e["metric"], sort_keys=True): _points(e) for e in a["result"]}
    held = {json.dumps(e["metric"], sort_keys=True): _points(e) for e in b["result"]}
    found = [f"only in wanka: {k}" for k in sorted(set(mine) - set(held))]
    found += [f"only in prometheus: {k}" for k in sorted(set(held) - set(mine))]
    for key in sorted(set(mine) & set(held)):
        x, y = mine[key], held[key]
        if [p[0] for p in x] != [p[0] for p in y]:
            missing = sorted({p[0] for p in y} - {p[0] for p in x})[:3]
            extra = sorted({p[0] for p in x} - {p[0] for p in y})[:3]
            found.append(f"{key}: times differ (missing {missing}, extra {extra})")
            continue
        wrong = [(p[0], p[1], q[1]) for p, q in zip(x, y, strict=True) if not _close(p[1], q[1])]
        if wrong:
            found.append(f"{key}: {len(wrong)} values differ, first {wrong[0]} (ours, theirs)")
    return found
