"""Prometheus remote_write on one core: decode + store of realistic requests, beside the DCGM
text path for the same samples.

Run: `.venv/bin/python bench/bench_remote_write.py [--gpus 10000] [--fields 40] [--scrapes 4]`.

Each scrape is what a Prometheus scraping dcgm-exporter on every node sends: GPUs × fields
series entries with dcgm-exporter's label set (`__name__`, `DCGM_FI_DRIVER_VERSION`,
`Hostname`, `UUID`, `device`, `gpu`, `instance`, `job`, `modelName`, `pci_bus_id`), one
sample each, 2,000 per request (Prometheus's `max_samples_per_send`), snappy-compressed.
One thread (DuckDB `SET threads=1`), a warm series cache (a steady feed repeats its series):

- decode: every request of a scrape (snappy, upb, checks, rows);
- store: the scrape's decoded rows in groups as the group commit forms them (all requests of a
  scrape queued: groups of up to 500,000 samples), each one transaction with the
  already-stored check, into a warehouse that holds the earlier scrapes;
- decode + store, samples/s: the figure to hold against 400,000/s (10,000 GPUs × 40 fields at 1 s);
- the DCGM text path: the same scrape as dcgm-exporter text with timestamps through
  `wanka ingest dcgm` (hash, parse, insert, COMMIT).

Medians over the scrapes after the first (which fills the series dictionary).
"""

from __future__ import annotations

import os

for _var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import io  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import cramjam  # noqa: E402
import pyarrow as pa  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

from service.serve.remote_write import MAX_GROUP_SAMPLES  # noqa: E402
from warehouse.ingest import ingest_stream  # noqa: E402
from warehouse.ingest.batch import read_context  # noqa: E402
from warehouse.ingest.models import ModelNames  # noqa: E402
from warehouse.kernel.engine import Engine  # noqa: E402
from warehouse.remote_write.decode import decode, merge  # noqa: E402
from warehouse.remote_write.messages import WriteRequest  # noqa: E402
from warehouse.remote_write.rows import Limits, SeriesCache  # noqa: E402
from warehouse.tsdb.append import append  # noqa: E402

TARGET_PER_S = 400_000
PER_REQUEST = 2_000
GPUS_PER_NODE = 8
FIELDS = [
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_RETIRED_PENDING",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "DCGM_FI_PROF_NVLINK_RX_BYTES",
]  # fmt: skip


def labels_of(gpu: int, field: str) -> list[tuple[str, str]]:
    node, index = divmod(gpu, GPUS_PER_NODE)
    host = f"gpu{node:05d}"
    return [
        ("__name__", field),
        ("DCGM_FI_DRIVER_VERSION", "550.90.07"),
        ("Hostname", host),
        ("UUID", f"GPU-{node:08x}-{index:04x}-4e1c-9a2b-5f3c1d7e{gpu:04x}"),
        ("device", f"nvidia{index}"),
        ("gpu", str(index)),
        ("instance", f"{host}:9400"),
        ("job", "dcgm-exporter"),
        ("modelName", "NVIDIA H100 80GB HBM3"),
        ("pci_bus_id", f"00000000:{0x18 + index * 0x10:02X}:00.0"),
    ]


def value_of(gpu: int, f: int, scrape: int) -> float:
    return float((gpu * 31 + f * 7 + scrape * 13) % 1000) + 0.5


def requests_of(
    series: list[list[tuple[str, str]]], scrape: int, ts_ms: int, gpus: int
) -> list[bytes]:
    """A scrape's remote_write bodies, 2,000 series entries each (one sample per entry)."""
    bodies = []
    for start in range(0, len(series), PER_REQUEST):
        request = WriteRequest()
        for i in range(start, min(start + PER_REQUEST, len(series))):
            one = request.timeseries.add()
            for name, value in series[i]:
                one.labels.add(name=name, value=value)
            gpu, f = divmod(i, len(FIELDS))
            one.samples.add(timestamp=ts_ms, value=value_of(gpu, f, scrape))
        bodies.append(bytes(cramjam.snappy.compress_raw(request.SerializeToString())))
    return bodies


def text_of(series: list[list[tuple[str, str]]], scrape: int, ts_ms: int) -> bytes:
    """The same scrape as dcgm-exporter text with timestamps."""
    lines = []
    for i, labels in enumerate(series):
        name = labels[0][1]
        rest = ",".join(f'{k}="{v}"' for k, v in labels[1:])
        gpu, f = divmod(i, len(FIELDS))
        lines.append(f"{name}{{{rest}}} {value_of(gpu, f, scrape)} {ts_ms}")
    return ("\n".join(lines) + "\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--fields", type=int, default=len(FIELDS))
    parser.add_argument("--scrapes", type=int, default=4)
    args = parser.parse_args()
    fields = FIELDS[: args.fields]
    series = [labels_of(g, f) for g in range(args.gpus) for f in fields]
    per_scrape = len(series)
    start_ms = int(time.time() * 1000) - args.scrapes * 15_000
    rows: list[tuple[float, float, float, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        ours = Engine(str(Path(folder) / "rw.duckdb"))
        text = Engine(str(Path(folder) / "text.duckdb"))
        for engine in (ours, text):
            engine.con.execute("SET threads = 1")
        cache = SeriesCache(ModelNames(read_context(ours).model_names))
        cur = ours.cursor()
        for scrape in range(args.scrapes):
            ts = start_ms + scrape * 15_000
            bodies = requests_of(series, scrape, ts, args.gpus)
            body_text = text_of(series, scrape, ts)
            began = time.perf_counter()
            decoded = [decode(b, cache, Limits()) for b in bodies]
            decode_s = time.perf_counter() - began
            began = time.perf_counter()
            for group in _groups(decoded):
                append(cur, merge(group), cache=cache)
            store_s = time.perf_counter() - began
            began = time.perf_counter()
            ingest_stream(text, "dcgm", io.BytesIO(body_text), f"scrape-{scrape}.prom")
            text_s = time.perf_counter() - began
            rows.append((decode_s, store_s, decode_s + store_s, text_s))
            print(
                f"scrape {scrape}: {len(bodies)} requests, decode {decode_s:.3f} s, "
                f"store {store_s:.3f} s, text path {text_s:.3f} s",
                flush=True,
            )
        cur.close()
        stored = ours.con.sql("SELECT count(*) FROM gpu_metrics").fetchall()[0][0]
        assert stored == per_scrape * args.scrapes, (stored, per_scrape * args.scrapes)
        ours.close()
        text.close()
    steady = rows[1:] or rows
    med = [statistics.median(r[i] for r in steady) for i in range(4)]
    print()
    print(f"{args.gpus:,} GPUs × {len(fields)} fields = {per_scrape:,} samples per scrape, "
          f"{PER_REQUEST:,} per request; one thread; medians of {len(steady)} scrapes")  # fmt: skip
    print()
    print("| step | seconds per scrape | samples/s |")
    print("|---|---:|---:|")
    for name, seconds in zip(
        ("remote_write decode", "remote_write store", "remote_write decode + store",
         "DCGM text (`wanka ingest dcgm`)"),
        med,
        strict=True,
    ):  # fmt: skip
        print(f"| {name} | {seconds:.3f} | {per_scrape / seconds:,.0f} |")
    rate = per_scrape / med[2]
    print()
    print(f"decode + store: {rate:,.0f} samples/s; ≥ {TARGET_PER_S:,}: "
          f"{'yes' if rate >= TARGET_PER_S else 'NO'}")  # fmt: skip


def _groups(decoded: list) -> list[list]:  # type: ignore[type-arg]
    """The groups the group commit forms when every request is queued at once."""
    groups: list[list] = [[]]  # type: ignore[type-arg]
    total = 0
    for rows in decoded:
        if groups[-1] and total + rows.received > MAX_GROUP_SAMPLES:
            groups.append([])
            total = 0
        groups[-1].append(rows)
        total += rows.received
    return groups


if __name__ == "__main__":
    main()
