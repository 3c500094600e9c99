"""bench_soak.py's feed: a Prometheus scraping dcgm-exporter on every GPU node of the demo and
sending it all to `wanka serve` by remote_write, on schedule, for the length of the run.

The GPUs are the demo's own (host, gpu, UUID and dcgm-exporter's labels read from the built
warehouse), so the health rules know them and a fault in the feed lands on a GPU they judge.
Every value is a healthy busy GPU's, steady from scrape to scrape (no XID, no counter moving):
one scrape's requests are built once and each scrape rewrites their timestamps in place
(live_feed.py's trick). From `xid_scrape` on, one GPU reports DCGM_FI_DEV_XID_ERRORS = 79 (fell
off the bus), as dcgm-exporter reports the last XID a GPU raised.

A scrape is stamped with the time it was due, as Prometheus stamps what it scrapes; it is sent,
2,000 samples a request, over `shards` connections, and the next one waits for its own time.
A sender that falls behind starts its next scrape late, so the lag (answer less stamp) grows.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import cramjam
import duckdb
import httpx
from bench_remote_write import FIELDS, PER_REQUEST
from live_feed import HEADERS, PLACEHOLDER_MS, _varint
from soak_clients import Errors

from warehouse.remote_write.messages import WriteRequest

#: The labels of dcgm-exporter's series kept from the demo's (not the job labels it adds).
EXPORTER_LABELS = ("DCGM_FI_DRIVER_VERSION", "device", "instance", "job", "modelName", "pci_bus_id")
XID_FIELD, XID_CODE = "DCGM_FI_DEV_XID_ERRORS", 79.0
#: A healthy GPU under a training job; fields not named report 0 (XIDs, ECC and remap
#: counters, throttle reasons, encoder and decoder).
BUSY = {
    "DCGM_FI_DEV_SM_CLOCK": 1980, "DCGM_FI_DEV_MEM_CLOCK": 2619, "DCGM_FI_DEV_GPU_TEMP": 62,
    "DCGM_FI_DEV_MEMORY_TEMP": 70, "DCGM_FI_DEV_POWER_USAGE": 610,
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 9.1e11, "DCGM_FI_DEV_GPU_UTIL": 97,
    "DCGM_FI_DEV_MEM_COPY_UTIL": 41, "DCGM_FI_DEV_FB_FREE": 17_800, "DCGM_FI_DEV_FB_USED": 63_200,
    "DCGM_FI_DEV_FB_RESERVED": 500, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": 2.1e5,
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.93, "DCGM_FI_PROF_SM_ACTIVE": 0.86,
    "DCGM_FI_PROF_SM_OCCUPANCY": 0.48, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.41,
    "DCGM_FI_PROF_DRAM_ACTIVE": 0.52, "DCGM_FI_PROF_PIPE_FP32_ACTIVE": 0.18,
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": 0.09, "DCGM_FI_PROF_PCIE_TX_BYTES": 1.2e9,
    "DCGM_FI_PROF_PCIE_RX_BYTES": 2.4e9, "DCGM_FI_PROF_NVLINK_TX_BYTES": 5.1e10,
    "DCGM_FI_PROF_NVLINK_RX_BYTES": 5.1e10,
}  # fmt: skip

#: Per simulated GPU of the demo: its newest dcgm-exporter label set.
_DEMO_GPUS = """
SELECT host, gpu, uuid, arg_max(labels, series_id) AS labels
FROM wanka.gpu_series
WHERE metric LIKE 'DCGM_%' AND gpu IS NOT NULL AND uuid IS NOT NULL
    AND host IN (SELECT host FROM nodes)
GROUP BY host, gpu, uuid ORDER BY host, gpu LIMIT ?
"""


@dataclass(frozen=True)
class FeedGpu:
    host: str
    gpu: int
    uuid: str
    labels: tuple[tuple[str, str], ...]  # without __name__, sorted

    @property
    def instance(self) -> str:
        return dict(self.labels).get("instance", f"{self.host}:9400")


def demo_gpus(db: str, n: int) -> list[FeedGpu]:
    """The first `n` simulated GPUs of the demo in `db` (by host, gpu), with their labels."""
    con = duckdb.connect(db, read_only=True)
    try:
        rows = con.execute(_DEMO_GPUS, [n]).fetchall()
    finally:
        con.close()
    gpus = []
    for host, gpu, uuid, labels in rows:
        kept = {k: v for k, v in json.loads(labels or "{}").items() if k in EXPORTER_LABELS}
        kept.update(Hostname=host, UUID=uuid, gpu=str(gpu))
        kept.setdefault("instance", f"{host}:9400")
        gpus.append(FeedGpu(host, int(gpu), uuid, tuple(sorted(kept.items()))))
    return gpus


def value_of(index: int, field: str) -> float:
    """`field` of the `index`-th GPU: the busy value within ±2 % (peers look alike, so no
    straggler rule fires), 0 for the fields that report faults.

    >>> value_of(0, "DCGM_FI_DEV_GPU_UTIL"), value_of(3, "DCGM_FI_DEV_XID_ERRORS")
    (95.06, 0.0)
    """
    busy = BUSY.get(field, 0)
    return round(busy * (0.98 + (index * 7919 % 41) / 1000), 2)


@dataclass
class Requests:
    """One scrape's uncompressed requests, stamped PLACEHOLDER_MS, and the XID variant of one."""

    raws: list[bytes]
    xid_at: int  # the request holding the faulty GPU's XID series
    xid_raw: bytes
    samples: int


def build_requests(gpus: list[FeedGpu], faulty: int) -> Requests:
    """Every GPU × FIELDS, PER_REQUEST series entries a request; `faulty` indexes `gpus`."""
    entries = [(g, f) for g in range(len(gpus)) for f in FIELDS]
    raws, xid_at, xid_raw = [], -1, b""
    for start in range(0, len(entries), PER_REQUEST):
        chunk = entries[start : start + PER_REQUEST]
        raws.append(_serialise(gpus, chunk, None))
        if (faulty, XID_FIELD) in chunk:
            xid_at, xid_raw = len(raws) - 1, _serialise(gpus, chunk, faulty)
    return Requests(raws, xid_at, xid_raw, len(entries))


def _serialise(gpus: list[FeedGpu], chunk: list[tuple[int, str]], faulty: int | None) -> bytes:
    request = WriteRequest()
    for g, name in chunk:
        one = request.timeseries.add()
        one.labels.add(name="__name__", value=name)
        for key, value in gpus[g].labels:
            one.labels.add(name=key, value=value)
        value = XID_CODE if g == faulty and name == XID_FIELD else value_of(g, name)
        one.samples.add(timestamp=PLACEHOLDER_MS, value=value)
    return request.SerializeToString()


@dataclass
class FeedLog:
    """What the feed saw: times are `time.time()` seconds, offsets from the run's start."""

    #: per scrape, each request's lag: when it was answered less the scrape's time
    lags_s: list[list[float]] = field(default_factory=list)
    due_s: list[float] = field(default_factory=list)  # per scrape, from the start
    started_s: list[float] = field(default_factory=list)
    finished_s: list[float] = field(default_factory=list)
    answered: dict[int, int] = field(default_factory=dict)  # stamp ms -> samples answered 204
    lost_samples: int = 0  # in requests given up on
    xid_stamp_ms: int | None = None
    xid_stored_at: float | None = None  # when its request was answered

    last_offset_s: float = 0.0  # when a scrape's last request is sent, after it is due

    def behind(self, interval_s: float) -> int:
        """Scrapes whose last request was answered more than an interval after it was sent."""
        late = self.last_offset_s + interval_s
        return sum(f > d + late for d, f in zip(self.due_s, self.finished_s, strict=True))


class Sender:
    """remote_write as Prometheus does it: snappy, retried on a 5xx or a dropped connection."""

    def __init__(self, url: str, auth: tuple[str, str], errors: Errors) -> None:
        self.url, self.auth, self.errors = url, auth, errors
        self.local = threading.local()

    def client(self) -> httpx.Client:
        if not hasattr(self.local, "client"):
            self.local.client = httpx.Client(base_url=self.url, auth=self.auth, timeout=120)
        made: httpx.Client = self.local.client
        return made

    def send(self, body: bytes) -> float | None:
        """The time it was answered (None: given up after 20 tries)."""
        for _ in range(20):
            try:
                answer = self.client().post("/api/v1/write", content=body, headers=HEADERS)
            except httpx.HTTPError as error:
                self.errors.add("remote_write", type(error).__name__, str(error))
            else:
                if answer.status_code == 204:
                    return time.time()
                self.errors.add("remote_write", f"HTTP {answer.status_code}", answer.text[:200])
                if answer.status_code < 500:
                    return None  # Prometheus drops what a 4xx refuses
            time.sleep(0.2)
        return None


def run_feed(
    sender: Sender,
    requests: Requests,
    *,
    start: float,
    duration_s: float,
    interval_s: float,
    shards: int,
    xid_scrape: int,
    log: FeedLog,
    stop: threading.Event,
    spread: bool = True,
) -> None:
    """Scrape k is due at `start` + k × interval (wall clock) while that is before the end.

    `spread`: as a Prometheus scraping many targets sends, request i of a scrape's n is
    stamped and sent i/n of an interval after the scrape is due (Prometheus spreads its
    targets' scrapes over the interval, and a remote_write shard sends once it holds a
    request's worth); otherwise every request of a scrape is stamped and sent at once."""
    n = len(requests.raws)
    per_request = [PER_REQUEST] * n
    per_request[-1] = requests.samples - PER_REQUEST * (n - 1)
    offsets = [i * interval_s / n if spread else 0.0 for i in range(n)]
    log.last_offset_s = offsets[-1]
    pending: list[tuple[int, list[int], list[Future[float | None]]]] = []

    def finish(k: int, stamps: list[int], sent: list[Future[float | None]]) -> None:
        answered = [future.result() for future in sent]
        log.finished_s.append(max((at for at in answered if at), default=time.time()) - start)
        for stamp, samples, at in zip(stamps, per_request, answered, strict=True):
            if at:
                log.answered[stamp] = log.answered.get(stamp, 0) + samples
            else:
                log.lost_samples += samples
        log.lags_s.append([at - ms / 1000 for ms, at in zip(stamps, answered, strict=True) if at])
        if k == xid_scrape:
            log.xid_stamp_ms, log.xid_stored_at = stamps[requests.xid_at], answered[requests.xid_at]

    with ThreadPoolExecutor(shards) as pool:
        k = 0
        while k * interval_s < duration_s:
            due = start + k * interval_s
            if stop.wait(max(0.0, due - time.time())):
                return
            log.due_s.append(k * interval_s)
            log.started_s.append(time.time() - start)
            raws = list(requests.raws)
            if k >= xid_scrape:
                raws[requests.xid_at] = requests.xid_raw
            stamps = [round((due + offset) * 1000) for offset in offsets]
            sent = _send(pool, sender, raws, due, offsets, stamps, stop, spread)
            if sent is None:
                return
            while pending:  # the scrape before, answered while this one was sent
                finish(*pending.pop(0))
            pending.append((k, stamps, sent))
            if not spread:
                finish(*pending.pop(0))
            k += 1
        while pending:
            finish(*pending.pop(0))
    stop.wait(max(0.0, start + duration_s - time.time()))  # the run lasts its whole length


_PLACEHOLDER = b"\x10" + _varint(PLACEHOLDER_MS)


def _send(
    pool: ThreadPoolExecutor,
    sender: Sender,
    raws: list[bytes],
    due: float,
    offsets: list[float],
    stamps: list[int],
    stop: threading.Event,
    spread: bool,
) -> list[Future[float | None]] | None:
    """Each request stamped and handed to a shard at its time; None once stopped."""
    sent = []
    for raw, offset, stamp in zip(raws, offsets, stamps, strict=True):
        if spread and stop.wait(max(0.0, due + offset - time.time())):
            return None
        body = raw.replace(_PLACEHOLDER, b"\x10" + _varint(stamp))
        sent.append(pool.submit(sender.send, bytes(cramjam.snappy.compress_raw(body))))
    return sent
