"""GPUs that jobs hold and leave idle, drawn with their ground truth, for the waste analyses.

Every cluster has them, and they are the waste `idle_gpu_jobs`, `wanka jobstats` ("did not use N
of M GPUs") and the report's waste section look for. Two kinds, drawn per job of the window:

    job   a job on one host (8 GPUs or fewer) whose every GPU reads 0 % while it holds them: a
          notebook or debug session left open, a job stuck before its first kernel
          (`SimConfig.idle_job_share`, 3 % by default)
    gpus  a multi-GPU job, not idle as a whole, of which 1 to min(GPUs − 1, 8) GPUs, drawn at
          random, read 0 %: a script that uses one of the GPUs it asked for, a launcher that
          starts fewer ranks than GPUs, a host of a multi-node job left out of the run
          (`SimConfig.idle_gpu_share`, 5 % of multi-GPU jobs by default)

The rates are ours, chosen low on purpose: NVIDIA, reporting on its own research clusters
("Making GPU Clusters More Efficient with NVIDIA Data Center Monitoring", 2025), ranks "jobs
occupy GPUs but don't use them" as a waste of moderate frequency, beside "don't use the compute
efficiently" (high); public traces of shared ML platforms show far more instances at 0 %
(Alibaba PAI, Weng et al., "MLaaS in the Wild", NSDI 2022), a training fleet fewer. A multi-node
job is never idle as a whole here: a hung collective spins at full utilisation, it does not idle.

An idle GPU of a job reports what an unused GPU reports: 0 % utilisation, no SM, tensor, NVLink
or NIC traffic, idle power and clocks, and the memory of the CUDA context the job's process
opened on it (`CONTEXT_MIB`). Idle GPUs are drawn after the faults, from a generator of their
own, so the rest of a simulation is the same whatever the rates; a job with an injected slow GPU
is never drawn (the straggler rule needs its other GPUs at work).

`truth/idle_gpus.csv` lists every idle (job, GPU): job_id, host, gpu, kind ('job' | 'gpus'),
samples (the GPU's utilisation samples while the job held it in the window) and idle_s = samples
× interval, the idle time `job_gpu_usage_by_gpu` credits it with; manifest.json's `idle_gpus`
has the rates and what was drawn (`idle_summary`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.simulate.config import GPUS_PER_HOST, SimConfig
from warehouse.simulate.telemetry_plan import TelemetryPlan

KINDS = ("gpus", "job")  # index = the kind column of TelemetryPlan.idle_gpus
#: Framebuffer a CUDA context takes on a GPU its process opens and never uses, MiB (PyTorch's
#: context on an H100 with CUDA 12 is 500-600 MiB).
CONTEXT_MIB = 512.0


def draw_idle(
    plan: TelemetryPlan, cfg: SimConfig, rng: np.random.Generator, spare: set[int]
) -> np.ndarray:
    """(window job, column, kind) rows of the GPUs left idle, in job order.

    `spare`: window jobs never drawn (those with an injected slow GPU).

    Args:
        plan: the telemetry plan; its window jobs and their reporting columns are drawn from.
        cfg: `idle_job_share` and `idle_gpu_share`.
        rng: the generator of this step alone.
        spare: window jobs to leave alone.
    """
    n = len(plan.job_k0)
    whole_draw, some_draw = rng.random(n), rng.random(n)
    rows: list[tuple[int, int, int]] = []
    for j in range(n):
        cols = plan.job_cols[j][plan.job_cols[j] >= 0]
        if not len(cols) or plan.job_k1[j] <= plan.job_k0[j]:
            continue
        # `spare` is asked last, so that the draws, and the other jobs', stay the same with it
        if len(plan.job_cols[j]) <= GPUS_PER_HOST and whole_draw[j] < cfg.idle_job_share:
            drawn = [(j, int(c), KINDS.index("job")) for c in cols]
        elif len(cols) >= 2 and some_draw[j] < cfg.idle_gpu_share:
            count = int(rng.integers(1, min(len(cols) - 1, GPUS_PER_HOST) + 1))
            picked = np.sort(rng.choice(cols, size=count, replace=False))
            drawn = [(j, int(c), KINDS.index("gpus")) for c in picked]
        else:
            continue
        if j not in spare:
            rows += drawn
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def held(idle_gpus: np.ndarray, job: np.ndarray) -> np.ndarray:
    """(scrapes, idle rows): whether each idle row's job holds its GPU at each scrape.

    >>> held(np.array([[0, 1, 0], [1, 1, 1]]), np.array([[0, 0], [2, 1]])).tolist()
    [[True, False], [False, True]]
    """
    found: np.ndarray = np.equal(job[:, idle_gpus[:, 1]], idle_gpus[:, 0])
    return found


def unused(idle_gpus: np.ndarray, job: np.ndarray) -> np.ndarray | None:
    """(scrapes, GPUs): True where a job holds a GPU it leaves idle; None when none does.

    >>> unused(np.array([[0, 1, 0]]), np.array([[0, 0], [2, 2]])).tolist()
    [[False, True], [False, False]]
    """
    if not len(idle_gpus):
        return None
    mask = np.zeros(job.shape, dtype=bool)
    # one GPU may be left idle by several jobs in turn: OR each row's scrapes into its column
    np.logical_or.at(mask.T, idle_gpus[:, 1], held(idle_gpus, job).T)
    return mask


def idle_table(
    plan: TelemetryPlan, samples: np.ndarray, job_ids: list[str], interval_s: float
) -> pa.Table:
    """truth/idle_gpus.csv: one row per idle (job, GPU), `samples` counted as telemetry drew."""
    rows = plan.idle_gpus
    jobs, cols = rows[:, 0], rows[:, 1]
    return pa.table({
        "job_id": pa.array([job_ids[int(plan.job_rows[j])] for j in jobs], pa.string()),
        "host": pc.take(plan.host_names, pa.array(plan.col_host[cols])),
        "gpu": pa.array(plan.col_gpu[cols], pa.int32()),
        "kind": pa.array([KINDS[k] for k in rows[:, 2]], pa.string()),
        "samples": pa.array(samples, pa.int64()),
        "idle_s": pa.array(samples * interval_s, pa.float64()),
    })  # fmt: skip


def idle_summary(plan: TelemetryPlan, cfg: SimConfig) -> dict[str, Any]:
    """The rates asked for and what was drawn, for manifest.json."""
    rows = plan.idle_gpus
    reporting = [int(np.count_nonzero(c >= 0)) for c in plan.job_cols]
    asked = [len(c) for c in plan.job_cols]
    jobs_of = {kind: {int(j) for j, _, k in rows.tolist() if KINDS[k] == kind} for kind in KINDS}
    return {
        "idle_job_share": cfg.idle_job_share,
        "idle_gpu_share": cfg.idle_gpu_share,
        "window_jobs": len(plan.job_k0),
        "single_host_jobs": sum(
            r >= 1 and a <= GPUS_PER_HOST for r, a in zip(reporting, asked, strict=True)
        ),
        "multi_gpu_jobs": sum(r >= 2 for r in reporting),
        "jobs_idle": len(jobs_of["job"]),
        "jobs_with_idle_gpus": len(jobs_of["gpus"]),
        "idle_gpus": len(rows),
    }
