"""Telemetry batches as Prometheus exposition text, the way dcgm-exporter writes it.

One file holds several scrapes of every host, so each sample carries its timestamp (ms since
the epoch) and each metric family appears once, `# HELP` and `# TYPE` first, then its samples:

    DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-…",pci_bus_id="00000000:18:00.0",device="nvidia0",
    modelName="NVIDIA H100 80GB HBM3",Hostname="h100a0001",DCGM_FI_DRIVER_VERSION="570.124.06"}
    87 1793491200000

(one line in the file): the exporter's own text, without the `instance` and `job` labels a
Prometheus scrape adds. A job's GPUs also carry its labels (`hpc_job`, or container, namespace
and pod; see job_labels.py), built once per distinct GPU and label set in a batch. AMD and
Huawei hosts are written under the same DCGM names (the warehouse's canonical field names, as a
vendor exporter mapped onto them would give), with their own device prefix and driver label.
Lines are built by polars string kernels, never by a Python loop over samples.
"""

from __future__ import annotations

import json
from typing import BinaryIO

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.simulate.metrics import METRICS
from warehouse.simulate.scrape_labels import SCRAPE_KEYS, exporter_columns
from warehouse.simulate.telemetry_plan import TelemetryPlan


class PromWriter:
    """Writes telemetry batches of one plan as .prom files; the label text is built once."""

    def __init__(self, plan: TelemetryPlan) -> None:
        self.plan = plan
        hosts = np.asarray(plan.host_names.to_pylist(), dtype=object)[plan.col_host]
        exporter = exporter_columns(plan)
        labels = pl.DataFrame({
            "gpu": plan.col_gpu,
            "uuid": plan.uuids.to_pylist(),
            "bus": exporter["pci_bus_id"],
            "device": exporter["device"],
            "model": exporter["modelName"],
            "host": hosts,
            "driver": exporter["DCGM_FI_DRIVER_VERSION"],
        }).select(
            pl.concat_str([
                pl.lit('{gpu="'), pl.col("gpu").cast(pl.String),
                pl.lit('",UUID="'), pl.col("uuid"),
                pl.lit('",pci_bus_id="'), pl.col("bus"),
                pl.lit('",device="'), pl.col("device"),
                pl.lit('",modelName="'), pl.col("model"),
                pl.lit('",Hostname="'), pl.col("host"),
                pl.lit('",DCGM_FI_DRIVER_VERSION="'), pl.col("driver"), pl.lit('"'),
            ]).alias("labels")
        )["labels"]  # fmt: skip
        # One "NAME{labels" head per (metric, GPU): a sample line is head + value + time.
        self.heads = self._heads(labels)

    @staticmethod
    def _heads(labels: pl.Series) -> pl.Series:
        frame = pl.DataFrame({"labels": labels})
        parts = [
            frame.select(pl.concat_str([pl.lit(m.name), pl.col("labels")]).alias("head"))
            for m in METRICS
        ]
        return pl.concat(parts)["head"]

    def write(self, batch: pa.RecordBatch, out: BinaryIO) -> None:
        """Write one batch (whole scrapes, metric-major) to `out`."""
        g, m = self.plan.columns, len(METRICS)
        per_metric = batch.num_rows // m
        cols = np.asarray(batch.column("uuid").indices).astype(np.int64)
        owners, suffixes = _label_suffixes(batch.column("labels"))
        ts_ms = pc.divide(batch.column("ts").cast(pa.int64()), 1000)
        frame = pl.DataFrame({
            "value": pl.from_arrow(batch.column("value")),
            "ts": pl.from_arrow(ts_ms),
        })  # fmt: skip
        key: np.ndarray | None = None
        for index, metric_def in enumerate(METRICS):
            block = slice(index * per_metric, (index + 1) * per_metric)
            # A sample's head is fixed by its GPU and its job's labels: build each distinct one
            # once per field (the blocks of a batch share their layout), then gather per row.
            block_key = cols[block] * len(suffixes) + owners[block]
            if key is None or not np.array_equal(block_key, key):
                key = block_key
                distinct, inverse = np.unique(key, return_inverse=True)
            heads = pl.DataFrame({
                "head": self.heads.gather(index * g + distinct // len(suffixes)),
                "extra": suffixes.gather(distinct % len(suffixes)),
            }).select(pl.concat_str(["head", "extra"]))["head"]  # fmt: skip
            value = pl.col("value")
            text = value.cast(pl.Int64) if metric_def.integral else value
            lines = frame.slice(index * per_metric, per_metric).with_columns(
                heads.gather(inverse).alias("head")
            ).select(
                pl.concat_str([
                    pl.col("head"), pl.lit("} "), text.cast(pl.String),
                    pl.lit(" "), pl.col("ts").cast(pl.String),
                ]).alias("line")
            )  # fmt: skip
            header = f"# HELP {metric_def.name} {metric_def.help}\n"
            header += f"# TYPE {metric_def.name} {metric_def.kind}\n"
            out.write(header.encode())
            lines.write_csv(out, include_header=False, quote_style="never")


def _label_suffixes(labels: pa.Array) -> tuple[np.ndarray, pl.Series]:
    """Per row an index into the label texts, and the texts: `,hpc_job="…"` or
    `,container="…",namespace="…",pod="…"`, the last one '' (rows without labels).

    `labels` holds JSON text, dictionary-encoded: each distinct entry is turned into label
    text once. The scrape's labels in it are left out: the head has the exporter's, and the
    target's (`instance`, `job`) are Prometheus's, not in what the exporter writes.
    """
    if labels.null_count == len(labels):
        return np.zeros(len(labels), dtype=np.int64), pl.Series("extra", [""], dtype=pl.String)
    encoded = labels if isinstance(labels, pa.DictionaryArray) else labels.dictionary_encode()
    texts = [
        "".join(f',{k}="{v}"' for k, v in json.loads(text).items() if k not in SCRAPE_KEYS)
        for text in encoded.dictionary.to_pylist()
    ]
    none = len(texts)
    owners = np.asarray(pc.fill_null(encoded.indices, none)).astype(np.int64)
    return owners, pl.Series("extra", [*texts, ""], dtype=pl.String)
