"""What really happened, for checking what the warehouse works out from the files.

    truth/job_gpus.csv   job_id, host, gpu, start_at, end_at
    truth/job_usage.csv  job_id, gpus, samples, util_pct, power_w
    truth/faults.csv     kind, host, gpu, job_id, start_at, end_at, magnitude, detail (only
                         with SimConfig.faults; see faults.py)
    truth/idle_gpus.csv  job_id, host, gpu, kind, samples, idle_s: the GPUs jobs left idle
                         (see idle.py)

`job_gpus`: one row per job and GPU it held during at least one scrape, from the schedule the
telemetry was drawn from. The interval is half-open and covers exactly the scrapes the job held
the GPU at: start_at is the first such scrape, end_at 1 ms after the last (the convention of
`job_gpus` rows learned from labels, see sql/schema/0014_job_gpus.sql), in ISO 8601 UTC.

`job_usage`: per job, the DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_POWER_USAGE samples drawn for its
GPUs while it held them, counted and averaged as the simulator emitted them (utilisation is
integral and power has milliwatt resolution, so the sums are exact; only the division rounds).

A job is named as `job_gpus` names it: a Slurm job by sacct's JobID (what `hpc_job` carries), a
pod by 'namespace/pod' (the jobs table's `job_id` of a pod is the pod name alone).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from warehouse.simulate.faults import truth_table
from warehouse.simulate.idle import held, idle_table
from warehouse.simulate.metrics import METRIC_INDEX
from warehouse.simulate.tables import TS_TYPE
from warehouse.simulate.telemetry_plan import TelemetryPlan

_UTIL = METRIC_INDEX["DCGM_FI_DEV_GPU_UTIL"]
_POWER = METRIC_INDEX["DCGM_FI_DEV_POWER_USAGE"]
#: How far past its last sample a job's interval ends (capped at the next scrape).
LABEL_END_US = 1_000


def truth_job_ids(jobs: pa.Table, clusters: pa.Table) -> list[str]:
    """Per jobs row, the job as `job_gpus` names it: JobID, or 'namespace/pod' for a pod."""
    pods = {
        c["cluster"]
        for c in clusters.select(["cluster", "scheduler"]).to_pylist()
        if c["scheduler"] == "kubernetes"
    }
    rows = jobs.select(["job_id", "account", "cluster"]).to_pylist()
    return [f"{r['account']}/{r['job_id']}" if r["cluster"] in pods else r["job_id"] for r in rows]


class JobUsage:
    """Per-job sums over the samples telemetry draws; pass `observe` to `telemetry_batches`."""

    def __init__(self, plan: TelemetryPlan) -> None:
        self.plan = plan
        bins = len(plan.job_k0) + 1  # the last one is the idle entry
        self.samples = np.zeros(bins, dtype=np.int64)
        self.util_sum = np.zeros(bins, dtype=np.float64)
        self.power_mw_sum = np.zeros(bins, dtype=np.float64)
        self.idle_samples = np.zeros(len(plan.idle_gpus), dtype=np.int64)  # per idle row

    def observe(self, job: np.ndarray, values: np.ndarray) -> None:
        """Add one batch: `job` (scrapes, GPUs) and `values` (fields, scrapes, GPUs)."""
        self.idle_samples += held(self.plan.idle_gpus, job).sum(axis=0)
        index = job.ravel()
        bins = len(self.samples)
        self.samples += np.bincount(index, minlength=bins)
        # Integers below 2**53 add exactly in float64, in any order.
        self.util_sum += np.bincount(index, weights=values[_UTIL].ravel(), minlength=bins)
        milliwatts = np.rint(values[_POWER].ravel() * 1000)
        self.power_mw_sum += np.bincount(index, weights=milliwatts, minlength=bins)

    def table(self, job_ids: list[str]) -> pa.Table:
        """One row per window job (`job_ids` indexed by jobs row) that had a sample."""
        plan = self.plan
        n = len(plan.job_k0)
        samples = self.samples[:n]
        seen = np.flatnonzero(samples > 0)
        counts = samples[seen]
        return pa.table({
            "job_id": pa.array([job_ids[int(plan.job_rows[i])] for i in seen], pa.string()),
            "gpus": pa.array([len(plan.job_cols[i]) for i in seen], pa.int32()),
            "samples": pa.array(counts, pa.int64()),
            "util_pct": pa.array(self.util_sum[seen] / counts, pa.float64()),
            "power_w": pa.array(self.power_mw_sum[seen] / counts / 1000, pa.float64()),
        })  # fmt: skip


def job_gpus_table(plan: TelemetryPlan, job_ids: list[str]) -> pa.Table:
    """Which job held which GPU over which scrapes (see the module docstring)."""
    n = len(plan.job_k0)
    held = [i for i in range(n) if plan.job_k1[i] > plan.job_k0[i]]
    cols = [plan.job_cols[i] for i in held]
    repeat = np.array([len(c) for c in cols], dtype=np.int64)
    col = np.concatenate(cols) if cols else np.empty(0, dtype=np.int64)
    k0 = np.repeat(plan.job_k0[held], repeat).astype(np.int64)
    k1 = np.repeat(plan.job_k1[held], repeat).astype(np.int64)
    start = plan.start_us + k0 * plan.interval_us
    end = plan.start_us + (k1 - 1) * plan.interval_us + min(LABEL_END_US, plan.interval_us)
    hosts = pc.take(plan.host_names, pa.array(plan.col_host[col]))
    return pa.table({
        "job_id": pa.array(np.repeat(np.array([job_ids[int(plan.job_rows[i])] for i in held],
                                              dtype=object), repeat), pa.string()),
        "host": hosts,
        "gpu": pa.array(plan.col_gpu[col], pa.int32()),
        "start_at": pa.array(start, pa.int64()).cast(TS_TYPE),
        "end_at": pa.array(end, pa.int64()).cast(TS_TYPE),
    })  # fmt: skip


def write_truth(
    plan: TelemetryPlan, usage: JobUsage, job_ids: list[str], folder: Path
) -> list[Path]:
    """Write job_gpus.csv, job_usage.csv, idle_gpus.csv (and faults.csv) under `folder`;
    returns their paths."""
    paths = [folder / "job_gpus.csv", folder / "job_usage.csv", folder / "idle_gpus.csv"]
    pacsv.write_csv(_iso(job_gpus_table(plan, job_ids)), paths[0])
    pacsv.write_csv(usage.table(job_ids), paths[1])
    interval_s = plan.interval_us / 1e6
    pacsv.write_csv(idle_table(plan, usage.idle_samples, job_ids, interval_s), paths[2])
    if plan.faults.truth:
        paths.append(folder / "faults.csv")
        pacsv.write_csv(_iso(faults_table(plan, job_ids)), paths[-1])
    return paths


def faults_table(plan: TelemetryPlan, job_ids: list[str]) -> pa.Table:
    """The injected faults (faults.py) with host names, GPU indices, job names and times."""
    return truth_table(
        plan.faults,
        host_names=plan.host_names.to_pylist(),
        col_gpu=plan.col_gpu,
        job_names=[job_ids[int(row)] for row in plan.job_rows],
        start_us=plan.start_us,
        interval_us=plan.interval_us,
    )


def _iso(table: pa.Table) -> pa.Table:
    """Timestamps as ISO 8601 UTC with microseconds and a Z."""
    columns = [
        pc.strftime(column, format="%Y-%m-%dT%H:%M:%SZ") if pa.types.is_timestamp(column.type)
        else column
        for column in table.columns
    ]  # fmt: skip
    return pa.Table.from_arrays(columns, names=table.column_names)
