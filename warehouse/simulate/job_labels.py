"""The labels a job's samples carry, by how dcgm-exporter was deployed (`SimConfig.job_labels`).

dcgm-exporter started with `--hpc-job-mapping-dir` reads one file per GPU naming the Slurm job
on it and adds `hpc_job="<id>"` to that GPU's samples; in Kubernetes mode it asks the kubelet and
adds `container`, `namespace` and `pod`. Either way the label set is a property of the job;
telemetry adds it to the labels of the GPU's scrape (scrape_labels.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from warehouse.simulate.config import JOB_LABELS


def label_text(labels: dict[str, str]) -> str:
    """Labels as the `gpu_metrics.labels` JSON: keys sorted, no spaces.

    >>> label_text({"pod": "p-1", "container": "c", "namespace": "ns"})
    '{"container":"c","namespace":"ns","pod":"p-1"}'
    >>> label_text({"hpc_job": "7340001"})
    '{"hpc_job":"7340001"}'
    """
    return json.dumps(labels, sort_keys=True, separators=(",", ":"))


def job_labels(
    mode: str,
    kubernetes: np.ndarray,
    job_ids: Sequence[str],
    containers: Sequence[str],
    namespaces: Sequence[str],
) -> tuple[np.ndarray, list[dict[str, str]]]:
    """Which jobs' samples carry labels, and each job's labels.

    Args:
        mode: one of `JOB_LABELS`.
        kubernetes: per job, whether it is a pod (else a Slurm job).
        job_ids: per job, its id: sacct's JobID for a Slurm job, the pod name for a pod.
        containers: per job, the container name (pods only).
        namespaces: per job, the namespace (pods only).

    Returns:
        (labelled, sets): `labelled` has one entry per job plus a last False one for the idle
        entry of telemetry's occupancy; `sets` one label set per job (used where labelled).

    >>> on, sets = job_labels("hpc", np.array([False, True]), ["7", "p-x"], ["", "c"], ["", "n"])
    >>> on.tolist(), sets
    ([True, True, False], [{'hpc_job': '7'}, {'container': 'c', 'namespace': 'n', 'pod': 'p-x'}])
    >>> job_labels("kubernetes", np.array([False, True]), ["7", "p"], ["", "c"], ["", "n"])[0]
    array([False,  True, False])
    """
    if mode not in JOB_LABELS:
        raise ValueError(f"job_labels must be one of {JOB_LABELS}, got {mode!r}")
    pods = np.asarray(kubernetes, dtype=bool)
    if mode == "hpc":
        labelled = np.ones(len(pods), dtype=bool)
    elif mode == "kubernetes":
        labelled = pods.copy()
    else:
        labelled = np.zeros(len(pods), dtype=bool)
    sets = [
        {"container": c, "namespace": s, "pod": j} if pod else {"hpc_job": j}
        for pod, j, c, s in zip(pods.tolist(), job_ids, containers, namespaces, strict=True)
    ]
    return np.append(labelled, False), sets
