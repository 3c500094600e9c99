"""Step times a training loop logs: job_events rows `step_time`, drawn after the faults.

Every multi-node Slurm job (the jobs that checkpoint, joblog.py) logs, every `LOG_S` seconds of
running, the mean seconds per training step over the interval just ended: `value` the mean step
time, `detail` the steps it covers ('steps 1201-1350'), `ts` the interval's end; host and gpu
are NULL (a job-wide figure). A job's step time is its own (lognormal around 2.5 s), with ~1 %
noise per interval. What lengthens an interval's mean:

- a checkpoint save (`JobLog.saves`): the GPUs make no step while it writes, so the steps that
  end in the interval are fewer and each took longer on average; an interval in which no step
  ended (a save covering it) logs nothing;
- a slow GPU (faults.py's slow_gpu, SM activity × factor 0.80–0.90): a job in lock step runs
  at its slowest GPU's pace, so from the fault's start each step takes 1/factor as long.

The rows come from a generator of their own, drawn after the faults, so that the rest of the
simulation (telemetry included) is the same with or without them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.simulate.config import SimConfig
from warehouse.simulate.inventory import Inventory
from warehouse.simulate.joblog import JobLog
from warehouse.simulate.scheduler import Schedule
from warehouse.simulate.tables import timestamps, to_table
from warehouse.simulate.workload import Workload

#: Seconds of running between two step-time log lines.
LOG_S = 300.0
#: Relative noise of one interval's mean step time (sd of its logarithm).
NOISE = 0.01
#: Median of a job's own step time, s, and the spread of its logarithm.
STEP_MEDIAN_S, STEP_SIGMA = 2.5, 0.5


def step_time_events(
    cfg: SimConfig,
    inv: Inventory,
    work: Workload,
    sched: Schedule,
    log: JobLog,
    slowed: Sequence[tuple[int, float, float, float]],
    rng: np.random.Generator,
) -> pa.Table:
    """job_events rows `step_time` of every multi-node Slurm job, in time order.

    Args:
        slowed: (job, start, end, factor) per slow GPU: the job (a workload index) runs at
            `factor` of its pace from `start` to `end` (seconds after cfg.start).
    """
    horizon = float(cfg.window_s)
    saves: dict[int, list[tuple[float, float]]] = {}
    for t0, t1, job in log.saves:
        saves.setdefault(job, []).append((t0, t1))
    slow = {job: (t0, t1, factor) for job, t0, t1, factor in slowed}
    rows: list[tuple[float, int, float, str]] = []
    multi = (work.nodes > 1) & ~np.isnan(sched.start_s)
    for job in np.flatnonzero(multi).tolist():
        if inv.plans[int(work.cluster[job])].scheduler != "slurm":
            continue
        step_s = float(np.clip(rng.lognormal(math.log(STEP_MEDIAN_S), STEP_SIGMA), 0.3, 30.0))
        begin = float(sched.start_s[job])
        finish = horizon if np.isnan(sched.end_s[job]) else float(sched.end_s[job])
        n = int((finish - begin) // LOG_S)
        noise = rng.lognormal(0.0, NOISE, n)
        ends = begin + LOG_S * np.arange(1, n + 1)
        steps = interval_steps(ends - LOG_S, ends, step_s, saves.get(job, []), slow.get(job))
        done = np.floor(np.cumsum(steps) + 1e-9).astype(np.int64)
        first = np.concatenate([[1], done[:-1] + 1])
        for i in np.flatnonzero(done >= first).tolist():
            mean_s = LOG_S / float(steps[i]) * float(noise[i])
            rows.append((float(ends[i]), job, round(mean_s, 4), f"steps {first[i]}-{done[i]}"))
    rows.sort(key=lambda r: (r[0], r[1]))
    return to_table("job_events", {
        "job_id": [log.job_ids[r[1]] for r in rows],
        "ts": timestamps(cfg.start_us, np.array([r[0] for r in rows], dtype=float)),
        "event": ["step_time"] * len(rows),
        "value": [r[2] for r in rows],
        "detail": [r[3] for r in rows],
    }, rows=len(rows))  # fmt: skip


def interval_steps(
    starts: np.ndarray,
    ends: np.ndarray,
    step_s: float,
    saves: Sequence[tuple[float, float]],
    slow: tuple[float, float, float] | None,
) -> np.ndarray:
    """Steps done in each interval: its time outside the saves over the step time, a slow
    GPU's stretch (start, end, factor) at `factor` of the pace.

    >>> interval_steps(np.array([0.0, 300.0]), np.array([300.0, 600.0]), 2.0, [(250, 350)],
    ...                (450.0, 600.0, 0.8)).tolist()
    [125.0, 110.0]
    """

    def overlap(lo: float, hi: float) -> np.ndarray:
        length: np.ndarray = np.clip(np.minimum(ends, hi) - np.maximum(starts, lo), 0.0, None)
        return length

    def busy(lo: float, hi: float) -> np.ndarray:  # time in [lo, hi) outside the saves
        idle = np.zeros(len(starts))
        for s0, s1 in saves:
            idle += overlap(max(lo, s0), min(hi, s1))
        return overlap(lo, hi) - idle

    running = busy(-math.inf, math.inf)
    slowed = np.zeros(len(starts)) if slow is None else busy(slow[0], slow[1])
    factor = 1.0 if slow is None else slow[2]
    steps: np.ndarray = (running - slowed + slowed * factor) / step_s
    return steps


def merge_events(events: pa.Table, more: pa.Table) -> pa.Table:
    """`events` and `more` in time order (ties: `events` first, each in its own order)."""
    merged = pa.concat_tables([events, more])
    return merged.take(pc.sort_indices(merged, [("ts", "ascending")]))
