"""bench_promql's samples: GPUs on 8-GPU nodes with dcgm-exporter's label set, the Grafana
dashboard's six fields scraped every 60 s, as the remote_write requests all three stores get
(snappy protobuf, half an hour of samples per series entry, in time order); and how they are
loaded into Prometheus, VictoriaMetrics and wanka, each timed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import cramjam
import httpx
import numpy as np

from warehouse.ingest.batch import read_context
from warehouse.ingest.models import ModelNames
from warehouse.kernel.engine import Engine
from warehouse.remote_write.decode import decode
from warehouse.remote_write.messages import WriteRequest
from warehouse.remote_write.rows import Limits, SeriesCache
from warehouse.tsdb.append import append
from warehouse.tsdb.compact import FLUSH, compact

GPUS_PER_NODE = 8
SCRAPE_S = 60
SCRAPE_OFFSET_S = 7  # seconds past the minute of every scrape
SLICE_STEPS = 30  # samples per series entry of a request: half an hour
SERIES_PER_REQUEST = 2_000
FIELDS = (
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
)


def labels_of(gpu: int, field: str) -> list[tuple[str, str]]:
    """dcgm-exporter's labels, as Prometheus stores them after scraping it (sorted)."""
    node, index = divmod(gpu, GPUS_PER_NODE)
    found = {
        "__name__": field,
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
        "Hostname": f"gpu-{node:05d}",
        "UUID": f"GPU-{node:08x}-{index:04x}-11ef-9b2f-0242ac120002",
        "device": f"nvidia{index}",
        "gpu": str(index),
        "instance": f"10.{node >> 16 & 255}.{node >> 8 & 255}.{node & 255}:9400",
        "job": "dcgm-exporter",
        "modelName": "NVIDIA H100 80GB HBM3",
        "pci_bus_id": f"00000000:{0x18 + index * 0x10:02X}:00.0",
    }
    return sorted(found.items())


def values_of(gpus: int, steps: int, seed: int = 11) -> dict[str, np.ndarray]:
    """(steps, gpus) values per field: utilisation that drifts, the rest following it."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 100, gpus)
    drift = np.cumsum(rng.normal(0, 4, (steps, gpus)), axis=0)
    util = np.clip(np.round(base + drift), 0, 100)
    tensor = np.round(np.clip(util / 100 * rng.uniform(0.2, 0.9, gpus), 0, 1), 6)
    return {
        "DCGM_FI_DEV_GPU_UTIL": util,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": tensor,
        "DCGM_FI_DEV_GPU_TEMP": np.round(32 + util * 0.45 + rng.normal(0, 1, (steps, gpus))),
        "DCGM_FI_DEV_POWER_USAGE": np.round(70 + util * 6.2 + rng.normal(0, 8, (steps, gpus)), 3),
        "DCGM_FI_DEV_SM_CLOCK": np.where(util > 5, 1980.0, 345.0),
        "DCGM_FI_DEV_FB_USED": np.round(util * 780 + 512),
    }


def requests(gpus: int, steps: int, start_ms: int) -> Iterator[tuple[int, bytes]]:
    """(samples, body) of every remote_write request, in time order."""
    values = values_of(gpus, steps)
    series = [(field, gpu) for field in FIELDS for gpu in range(gpus)]
    labels = {key: labels_of(key[1], key[0]) for key in series}
    for k0 in range(0, steps, SLICE_STEPS):
        k1 = min(steps, k0 + SLICE_STEPS)
        times = [start_ms + k * SCRAPE_S * 1000 for k in range(k0, k1)]
        for i in range(0, len(series), SERIES_PER_REQUEST):
            request = WriteRequest()
            for field, gpu in series[i : i + SERIES_PER_REQUEST]:
                entry = request.timeseries.add()
                for name, value in labels[(field, gpu)]:
                    entry.labels.add(name=name, value=value)
                column = values[field][k0:k1, gpu].tolist()
                for ts, value in zip(times, column, strict=True):
                    entry.samples.add(timestamp=ts, value=value)
            samples = len(request.timeseries) * (k1 - k0)
            yield samples, bytes(cramjam.snappy.compress_raw(request.SerializeToString()))


def load(
    db: str, prometheus: str, victoria: str, gpus: int, steps: int, start_ms: int
) -> dict[str, float]:
    """Every request to the three; seconds each took in all, and the samples."""
    engine = Engine(db)
    cache = SeriesCache(ModelNames(read_context(engine).model_names))
    cur = engine.cursor()
    limits = Limits()
    took = {"prometheus": 0.0, "victoria": 0.0, "wanka": 0.0, "samples": 0.0}
    headers = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
               "X-Prometheus-Remote-Write-Version": "0.1.0"}  # fmt: skip
    with httpx.Client(timeout=120) as client:
        for samples, body in requests(gpus, steps, start_ms):
            for name, url in (("prometheus", prometheus), ("victoria", victoria)):
                t0 = time.perf_counter()
                answer = client.post(f"{url}/api/v1/write", content=body, headers=headers)
                took[name] += time.perf_counter() - t0
                if answer.status_code != 204:
                    raise SystemExit(
                        f"{name} refused a request: {answer.status_code} {answer.text}"
                    )
            t0 = time.perf_counter()
            append(cur, decode(body, cache, limits), cache=cache)
            took["wanka"] += time.perf_counter() - t0
            took["samples"] += samples
        t0 = time.perf_counter()
        client.get(f"{victoria}/internal/force_flush").raise_for_status()
        took["victoria"] += time.perf_counter() - t0
    cur.close()
    engine.close()
    return took


def compact_now(db: str) -> tuple[int, int, float]:
    """Compact wanka's database at the real now as `wanka serve`'s scheduler does, the closed
    10 minutes of the open window flushed too: (samples moved into blocks, their bytes,
    seconds)."""
    engine = Engine(db)
    cur = engine.cursor()
    t0 = time.perf_counter()
    moved = [m for m in compact(cur, now=datetime.now(UTC), flush=FLUSH) if m.tier is None]
    took = time.perf_counter() - t0
    cur.close()
    engine.close()
    return sum(m.samples for m in moved), sum(m.bytes for m in moved), took


def load_one(db: str, prometheus: str, gpus: int, minutes: int) -> dict[str, float]:
    """The samples of `gpus` for `minutes` ending now, into Prometheus (remote_write) and
    wanka (its decode and store); seconds each took, and the samples."""
    steps = max(1, minutes * 60 // SCRAPE_S)
    start_ms = (int(time.time()) // SCRAPE_S - steps + 1) * SCRAPE_S * 1000 + SCRAPE_OFFSET_S * 1000
    engine = Engine(db)
    cache = SeriesCache(ModelNames(read_context(engine).model_names))
    cur = engine.cursor()
    limits = Limits()
    took = {"prometheus": 0.0, "wanka": 0.0, "samples": 0.0}
    headers = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
               "X-Prometheus-Remote-Write-Version": "0.1.0"}  # fmt: skip
    with httpx.Client(timeout=120) as client:
        for samples, body in requests(gpus, steps, start_ms):
            t0 = time.perf_counter()
            client.post(
                f"{prometheus}/api/v1/write", content=body, headers=headers
            ).raise_for_status()
            took["prometheus"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            append(cur, decode(body, cache, limits), cache=cache)
            took["wanka"] += time.perf_counter() - t0
            took["samples"] += samples
    cur.close()
    engine.close()
    return took
