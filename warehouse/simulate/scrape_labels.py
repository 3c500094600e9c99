"""The labels JSON of each telemetry sample: its GPU's scrape labels and its job's labels.

Prometheus scraping dcgm-exporter gives every series of a GPU the same labels: the exporter's
(`DCGM_FI_DRIVER_VERSION`, `device`, `modelName`, `pci_bus_id`, beside `gpu`, `UUID` and
`Hostname`) and the scrape target's (`instance`, `job`), plus the job labels of whatever runs
on the GPU (job_labels.py). gpu_metrics keeps `Hostname`, `gpu` and `UUID` as columns and every
other label in `labels` (warehouse/remote_write/labels.py), so the PromQL API rebuilds exactly
the series a real scrape has only if the simulated JSON carries the rest.

A sample's JSON is thus fixed by its (GPU, job) pair. Each batch finds its distinct pairs with
numpy; a cache builds each pair's text once for the whole window, so the work per batch grows
with the GPUs, never with the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from warehouse.simulate.job_labels import label_text
from warehouse.simulate.metrics import DEVICE_PREFIX, DRIVER_VERSION, PCI_BUS_IDS

if TYPE_CHECKING:
    from warehouse.simulate.telemetry_plan import TelemetryPlan

LABELS_TYPE = pa.string()  # JSON text, as the gpu_metrics.labels column holds
#: The scrape job's name, as NVIDIA's Helm chart and example Prometheus configs call it.
SCRAPE_JOB = "dcgm-exporter"
#: The labels dcgm-exporter writes itself on every sample, besides the column ones.
EXPORTER_KEYS = ("DCGM_FI_DRIVER_VERSION", "device", "modelName", "pci_bus_id")
#: Every label a scrape adds to a GPU's samples: the exporter's, and the target's Prometheus
#: adds (`instance`, `job`); job labels are the others.
SCRAPE_KEYS = frozenset((*EXPORTER_KEYS, "instance", "job"))


def exporter_columns(plan: TelemetryPlan) -> dict[str, list[str]]:
    """Per reporting GPU, the labels dcgm-exporter writes (`EXPORTER_KEYS`), as columns.

    AMD and Huawei hosts get their vendor's device prefix and driver version (a vendor exporter
    mapped onto the DCGM names, as prom.py writes them).
    """
    driver = [DRIVER_VERSION.get(v, DRIVER_VERSION["NVIDIA"]) for v in plan.vendors]  # per model
    prefix = [DEVICE_PREFIX.get(v, "nvidia") for v in plan.vendors]
    models, gpus = plan.col_model.tolist(), plan.col_gpu.tolist()
    return {
        "DCGM_FI_DRIVER_VERSION": [driver[m] for m in models],
        "device": [f"{prefix[m]}{g}" for m, g in zip(models, gpus, strict=True)],
        "modelName": [plan.full_names[m] for m in models],
        "pci_bus_id": [PCI_BUS_IDS[g % len(PCI_BUS_IDS)] for g in gpus],
    }


def gpu_label_sets(plan: TelemetryPlan) -> list[dict[str, str]]:
    """Per reporting GPU, every label its scrape adds (`SCRAPE_KEYS`)."""
    columns = exporter_columns(plan)
    columns["instance"] = [plan.instances[h] for h in plan.col_host.tolist()]
    columns["job"] = [SCRAPE_JOB] * plan.columns
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


class LabelTexts:
    """The labels column of a plan's batches, one JSON text per (GPU, job) pair, built once.

    Without scrape labels (`SimConfig.exporter_labels` off) a text depends on the job alone,
    and a sample of a GPU no labelled job holds has none (null).
    """

    def __init__(self, plan: TelemetryPlan) -> None:
        self._per_gpu = plan.exporter_labels
        self._gpus = gpu_label_sets(plan) if self._per_gpu else [{}]
        self._width = len(self._gpus)  # a pair's key is job × width + GPU
        self._jobs = [*plan.job_label_sets, {}]  # the idle entry last, as in the occupancy
        self._labelled = plan.labelled
        self._texts: dict[int, str | None] = {}

    def column(self, job: np.ndarray, repeats: int) -> pa.Array:
        """The labels of a batch: `job` its (scrapes, GPUs) occupancy, the rows that block
        `repeats` times over (once per field), dictionary-encoded."""
        labelled = self._labelled[job]
        if not self._per_gpu and not labelled.any():
            return pa.nulls(job.size * repeats, LABELS_TYPE)
        named = np.where(labelled, job, len(self._jobs) - 1).astype(np.int64)
        key = named * self._width + (np.arange(job.shape[1]) if self._per_gpu else 0)
        distinct, inverse = np.unique(key.ravel(), return_inverse=True)
        texts = [self._text(k) for k in distinct.tolist()]
        indices = np.tile(inverse.reshape(-1).astype(np.int32), repeats)
        missing = np.array([t is None for t in texts])
        mask = missing[indices] if missing.any() else None
        dictionary = pa.array([t or "" for t in texts], LABELS_TYPE)
        return pa.DictionaryArray.from_arrays(pa.array(indices, mask=mask), dictionary)

    def _text(self, key: int) -> str | None:
        """The JSON of one pair (None: no labels at all), from the cache after the first time."""
        if key not in self._texts:
            job, gpu = divmod(key, self._width)
            labels = {**self._gpus[gpu], **self._jobs[job]}
            self._texts[key] = label_text(labels) if labels else None
        return self._texts[key]
