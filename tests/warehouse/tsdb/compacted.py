"""What the compaction tests share: the samples they write and how they read gpu_metrics back
(as a multiset, values by their bits)."""

from __future__ import annotations

import struct
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.query.executor import execute

ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 11, 1, tzinfo=UTC)
FAR = datetime(2100, 1, 1, tzinfo=UTC)  # every window of the tests is closed by then
COLUMNS = "ts, host, gpu, uuid, model, metric, value, labels, batch_id"
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "node_load1")
SPECIAL_BITS = (
    0x7FF8000000000000,  # NaN
    0xFFF8000000000001,  # negative NaN with a payload
    0x7FF0000000000002,  # Prometheus staleness marker (a signalling NaN)
    0x7FF0000000000000,  # +Inf
    0xFFF0000000000000,  # -Inf
    0x8000000000000000,  # -0.0
    0x0000000000000001,  # smallest subnormal
    0x800FFFFFFFFFFFFF,  # negative subnormal
)


def double(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def rows(cur: duckdb.DuckDBPyConnection, where: str = "") -> Counter[tuple[Any, ...]]:
    """The multiset of gpu_metrics rows, values as their bits (NULL as None)."""
    table = cur.sql(f"SELECT {COLUMNS} FROM gpu_metrics {where}").to_arrow_table()
    value = table["value"]
    bits = np.asarray(value.fill_null(0).to_numpy(), dtype=np.float64).view(np.uint64)
    nulls = value.is_null().to_numpy(zero_copy_only=False)
    values = [None if n else int(b) for b, n in zip(bits, nulls, strict=True)]
    columns = [table[c].to_pylist() for c in COLUMNS.split(", ")]
    columns[6] = values
    return Counter(zip(*columns, strict=True))


def count(cur: duckdb.DuckDBPyConnection, sql: str) -> Any:
    return cur.execute(sql).fetchall()[0][0]


def table(samples: list[tuple[Any, ...]], batch: list[int | None] | None = None) -> pa.Table:
    """gpu_metrics rows of (ts, host, gpu, metric, labels, value) [, batch_id]."""
    columns: dict[str, Any] = {
        "ts": pa.array([s[0] for s in samples], pa.timestamp("us", tz="UTC")),
        "host": [s[1] for s in samples],
        "gpu": pa.array([s[2] for s in samples], pa.int32()),
        "uuid": [f"GPU-{s[1]}-{s[2]}" for s in samples],
        "metric": [s[3] for s in samples],
        "labels": pa.array([s[4] for s in samples], pa.string()),
        "value": pa.array([s[5] for s in samples], pa.float64()),
    }
    if batch is not None:
        columns["batch_id"] = pa.array(batch, pa.int64())
    return pa.table(columns)


def grid(hours: float, every_min: int = 10, hosts: int = 3, metrics: int = 2) -> pa.Table:
    """Samples every `every_min` minutes for `hours` from T0: each host, GPU 0, each metric."""
    steps = int(hours * 60 / every_min)
    return table(
        [
            (T0 + timedelta(minutes=k * every_min), f"h{h}", 0, METRICS[m], None, float(k + h + m))
            for k in range(steps)
            for h in range(hosts)
            for m in range(metrics)
        ]
    )


#: A dynamic table over gpu_metrics that the tests refresh across compactions.
PER_HOST = (
    "CREATE DYNAMIC TABLE per_host WITH (freshness = '1 hour') AS "
    "SELECT host, count(*) AS n, sum(value) AS s FROM gpu_metrics GROUP BY host"
)


def refresh_per_host(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """REFRESH per_host (PER_HOST); its outcome, once its rows equal its query's."""
    result: dict[str, Any] = (
        execute(cur, "REFRESH DYNAMIC TABLE per_host").read_all().to_pylist()[0]
    )
    held = sorted(cur.sql("SELECT host, n, s FROM per_host").fetchall())
    full = sorted(
        cur.sql("SELECT host, count(*), sum(value) FROM gpu_metrics GROUP BY host").fetchall()
    )
    assert held == full
    return result
