"""bench_storage's samples: the sizes it runs, the simulated cluster of each, its batches, and
what each store's measurement holds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa

from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.simulate.cluster import SimulatedCluster

START = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass
class Stored:
    """One store's figures for one size."""

    samples: int = 0
    bytes: int | None = None
    seconds: float = 0.0  # ingest (or write) time
    note: str = ""
    #: the bytes by part (chunks / index, data / indexdb, ...), summing to `bytes`
    parts: dict[str, int] = field(default_factory=dict)
    #: wanka only: the bytes before compaction (hot table), compaction's wall and CPU seconds
    hot_bytes: int | None = None
    compact_s: float = 0.0
    compact_cpu_s: float = 0.0
    #: wanka only: the second table, "where the bytes go" (name, bytes, samples it is over)
    where: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def per_sample(self) -> float | None:
        return self.bytes / self.samples if self.bytes is not None and self.samples else None

    @property
    def rate(self) -> float | None:
        return self.samples / self.seconds if self.seconds else None


@dataclass(frozen=True)
class Size:
    gpus: int
    interval_s: float
    hours: float

    @property
    def label(self) -> str:
        return f"{self.gpus:,} GPUs · {self.interval_s:g} s · {self.hours:g} h"


def parse_sizes(text: str) -> list[Size]:
    """'1000:60:24,10000:15:2' as sizes."""
    found = []
    for part in text.split(","):
        gpus, interval, hours = part.split(":")
        found.append(Size(int(gpus), float(interval), float(hours)))
    return found


def cluster_for(size: Size) -> SimulatedCluster:
    return simulate_cluster(
        SimConfig(
            gpus=size.gpus, hours=size.hours, interval_s=size.interval_s, start=START, seed=16
        )
    )


def batches(cluster: SimulatedCluster, hours: float | None = None) -> Iterator[pa.Table]:
    """The window's samples as tables of ≤ 2M rows, the first `hours` only if given."""
    limit = None
    if hours is not None:
        limit = START.timestamp() * 1e6 + hours * 3600e6
    for batch in cluster.telemetry_batches(max_rows=2_000_000):
        table = pa.Table.from_batches([batch])
        if limit is not None:
            first = table["ts"][0].value if hasattr(table["ts"][0], "value") else None
            if first is not None and first >= limit:
                return
        yield table
