"""Remote-write request bodies as Prometheus builds them (one series entry per sample)."""

from __future__ import annotations

import struct

import cramjam

from warehouse.remote_write.messages import WriteRequest

STALE = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]


def dcgm_labels(host: int, gpu: int, metric: str) -> list[tuple[str, str]]:
    return [
        ("__name__", metric),
        ("Hostname", f"node{host:03d}"),
        ("UUID", f"GPU-{host:04d}-{gpu:02d}"),
        ("device", f"nvidia{gpu}"),
        ("gpu", str(gpu)),
        ("instance", f"node{host:03d}:9400"),
        ("job", "dcgm"),
        ("modelName", "NVIDIA H100 80GB HBM3"),
    ]


def body(series: list[tuple[list[tuple[str, str]], list[tuple[int, float]]]]) -> bytes:
    """A snappy-compressed WriteRequest of (labels, [(ts ms, value), ...]) entries."""
    request = WriteRequest()
    for labels, samples in series:
        one = request.timeseries.add()
        for name, value in labels:
            one.labels.add(name=name, value=value)
        for ts, number in samples:
            one.samples.add(timestamp=ts, value=number)
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))


def scrape(hosts: int, gpus: int, metrics: list[str], ts: int) -> bytes:
    return body(
        [
            (dcgm_labels(h, g, m), [(ts, float(h * 100 + g))])
            for h in range(hosts)
            for g in range(gpus)
            for m in metrics
        ]
    )
