"""GPU telemetry as Arrow record batches: every GPU × scrape × DCGM field, vectorised.

A batch holds whole scrapes, laid out metric-major (metric, scrape, GPU) so each field is one
contiguous run, the layout a Prometheus text file wants. The columns that only depend on the
layout (host, gpu, uuid, model, metric, time offsets) are built once per batch shape and
reused; only values, timestamps and labels are new per batch (the labels' texts, one per GPU
and job, are built once per window: scrape_labels.py). Values are a function of the scrape
index: each scrape's noise comes from its own Philox counter block and the energy counter
carries integer millijoules, so any chunking yields the same samples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from warehouse.simulate.idle import CONTEXT_MIB, unused
from warehouse.simulate.metrics import METRIC_INDEX, METRICS
from warehouse.simulate.scrape_labels import LabelTexts
from warehouse.simulate.tables import TS_TYPE
from warehouse.simulate.telemetry_plan import F32, TelemetryPlan


def sample_count(plan: TelemetryPlan) -> int:
    """Rows `batches` yields in total: GPUs × scrapes × fields, less what silent hosts hold back."""
    quiet = sum(
        (plan.steps - onset) * int(np.count_nonzero(plan.col_host == host))
        for onset, host in plan.faults.silent.tolist()
    )
    return int((plan.columns * plan.steps - quiet) * len(METRICS))


#: Sees each batch's arrays before they become Arrow: the job index on each (scrape, GPU), the
#: idle entry where none runs, and the values as (field, scrape, GPU).
Observer = Callable[[np.ndarray, np.ndarray], None]


def batches(
    plan: TelemetryPlan, max_rows: int = 2_000_000, observe: Observer | None = None
) -> Iterator[pa.RecordBatch]:
    """The window's samples in time order, at most `max_rows` rows a batch.

    A batch always holds at least one whole scrape, so a scrape larger than `max_rows` (over
    125,000 GPUs at 16 fields) comes as one batch of its own. `observe`, when given, is called
    with each batch's occupancy and values (the ground truth accumulates from them).
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be positive, got {max_rows}")
    per_step = plan.columns * len(METRICS)
    steps_per_batch = max(1, max_rows // max(1, per_step))
    energy = plan.energy0_mj.copy()
    layouts: dict[int, dict[str, pa.Array | np.ndarray]] = {}
    labels = LabelTexts(plan)
    for k0 in range(0, plan.steps, steps_per_batch):
        k1 = min(plan.steps, k0 + steps_per_batch)
        if k1 - k0 not in layouts:
            layouts[k1 - k0] = _layout(plan, k1 - k0)
        yield _batch(plan, k0, k1, energy, layouts[k1 - k0], labels, observe)


def _layout(plan: TelemetryPlan, steps: int) -> dict[str, pa.Array | np.ndarray]:
    """The columns fixed by the batch shape, shared by every batch of that shape."""
    g, m = plan.columns, len(METRICS)
    reps = steps * m
    dictionary = pa.DictionaryArray.from_arrays
    step_offsets = np.repeat(np.arange(steps, dtype=np.int64) * plan.interval_us, g)
    return {
        "ts_offsets": np.tile(step_offsets, m),
        "host": dictionary(pa.array(np.tile(plan.col_host, reps)), plan.host_names),
        "gpu": pa.array(np.tile(plan.col_gpu, reps)),
        "uuid": dictionary(pa.array(np.tile(np.arange(g, dtype=np.int32), reps)), plan.uuids),
        "model": dictionary(pa.array(np.tile(plan.col_model, reps)), plan.model_names),
        "metric": dictionary(
            pa.array(np.repeat(np.arange(m, dtype=np.int32), steps * g)),
            pa.array([x.name for x in METRICS]),
        ),
    }


def _batch(
    plan: TelemetryPlan,
    k0: int,
    k1: int,
    energy: np.ndarray,
    layout: dict[str, pa.Array | np.ndarray],
    labels: LabelTexts,
    observe: Observer | None,
) -> pa.RecordBatch:
    steps, g = k1 - k0, plan.columns
    job = _occupancy(plan, k0, k1)
    values = np.empty((len(METRICS), steps, g), dtype=np.float64)
    _fill(plan, k0, k1, job, energy, values)
    quiet = _silenced(plan, k0, k1)
    if observe is not None:  # what a silent host holds back is not seen either
        idle = len(plan.job_k0)
        observe(job if quiet is None else np.where(quiet.reshape(job.shape), idle, job), values)
    ts = np.asarray(layout["ts_offsets"]) + (plan.start_us + k0 * plan.interval_us)
    rows = len(ts)
    columns = {
        "ts": pa.Array.from_buffers(TS_TYPE, rows, [None, pa.py_buffer(ts)]),
        "host": layout["host"],
        "gpu": layout["gpu"],
        "uuid": layout["uuid"],
        "model": layout["model"],
        "metric": layout["metric"],
        "value": pa.array(values.reshape(-1)),
        "labels": labels.column(job, len(METRICS)),
    }
    batch = pa.RecordBatch.from_pydict(columns)
    return batch if quiet is None else batch.filter(pa.array(~np.tile(quiet, len(METRICS))))


def _silenced(plan: TelemetryPlan, k0: int, k1: int) -> np.ndarray | None:
    """(scrapes × GPUs, flattened) True where a silent host's GPU sends nothing; None: all send."""
    rows = plan.faults.silent[plan.faults.silent[:, 0] < k1]
    if not len(rows):
        return None
    quiet = np.zeros((k1 - k0, plan.columns), dtype=bool)
    for onset, host in rows.tolist():
        quiet[max(onset, k0) - k0 :, plan.col_host == host] = True
    return quiet.ravel()


def _live(rows: np.ndarray, k0: int, k1: int) -> list[tuple[slice, int, list[float]]]:
    """The fault rows (k0, k1, col, ...) overlapping scrapes [k0, k1): rows slice, col, rest."""
    hits = rows[(rows[:, 0] < k1) & (rows[:, 1] > k0)] if len(rows) else rows
    return [
        (slice(max(int(a), k0) - k0, min(int(b), k1) - k0), int(c), rest)
        for a, b, c, *rest in hits.tolist()
    ]


def _occupancy(plan: TelemetryPlan, k0: int, k1: int) -> np.ndarray:
    """(scrapes, GPUs) index of the job on each GPU; the idle entry where none runs."""
    idle = len(plan.job_k0)
    job = np.full((k1 - k0, plan.columns), idle, dtype=np.int32)
    live = np.flatnonzero((plan.job_k0 < k1) & (plan.job_k1 > k0))
    for j in live.tolist():
        lo, hi = max(int(plan.job_k0[j]), k0) - k0, min(int(plan.job_k1[j]), k1) - k0
        job[lo:hi, plan.job_cols[j]] = j
    return job


def _noise(plan: TelemetryPlan, k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normal fields per scrape, each scrape from its own Philox block."""
    z = np.empty((k1 - k0, 2, plan.columns), dtype=F32)
    for k in range(k0, k1):
        bits = np.random.Philox(key=plan.key, counter=[0, 0, k, 0])
        np.random.Generator(bits).standard_normal(out=z[k - k0], dtype=F32)
    return z[:, 0], z[:, 1]


def _fill(
    plan: TelemetryPlan,
    k0: int,
    k1: int,
    job: np.ndarray,
    energy: np.ndarray,
    out: np.ndarray,
) -> None:
    """Write every field's (scrapes, GPUs) block into `out`; advance the energy counters."""
    z1, z2 = _noise(plan, k0, k1)
    left_idle = unused(plan.idle_gpus, job)  # held by a job that never uses them (idle.py)
    busy = job < len(plan.job_k0)
    if left_idle is not None:
        busy &= ~left_idle
    util = plan.util_mean[job] + plan.util_sd[job] * z1
    np.clip(util, plan.util_min[job], 100, out=util)
    for s0, s1, j in plan.saves[(plan.saves[:, 0] < k1) & (plan.saves[:, 1] > k0)].tolist():
        # A synchronous checkpoint save stalls the GPUs: utilisation drops to a few percent.
        rows, cols = slice(max(s0, k0) - k0, min(s1, k1) - k0), plan.job_cols[j]
        util[rows, cols] = np.maximum(util[rows, cols] * F32(0.04), 1)
    if left_idle is not None:
        util[left_idle] = 0
    np.rint(util, out=util)
    load = util * F32(0.01)

    tdp, idle = plan.tdp, plan.idle
    jitter = np.where(busy, z2, np.abs(z2)) * np.where(busy, tdp * F32(0.012), idle * F32(0.02))
    power = idle + (F32(0.9) * tdp - idle) * load + jitter
    np.clip(power, idle, tdp, out=power)
    slow = _live(plan.faults.slow, k0, k1)
    for rows, col, (factor,) in slow:  # a slow GPU does less work and draws less above idle
        power[rows, col] = idle[col] + (power[rows, col] - idle[col]) * F32(factor)
    temp = plan.ambient + (F32(45) / tdp) * power + F32(0.4) * z2
    fb_used = np.rint(plan.fb_frac[job] * (plan.fb_total - plan.fb_reserved))
    if left_idle is not None:
        fb_used[left_idle] = CONTEXT_MIB
    throttle = np.clip((power / tdp - F32(0.8)) * F32(5), 0, 1)
    clock = np.where(busy, plan.clock_max * (1 - F32(0.12) * throttle), plan.clock_idle)
    sm_active = load * plan.sm_eff[job]
    for rows, col, (factor,) in slow:
        sm_active[rows, col] *= F32(factor)
    for rows, col, (hotter, slower) in _live(plan.faults.hot, k0, k1):
        temp[rows, col] += F32(hotter)
        clock[rows, col] *= F32(slower)
    net = np.minimum(plan.net_frac[job] * plan.nic_bps, plan.pcie_bps) * load
    nvlink = plan.nvlink_bps[job] * load * (1 + F32(0.05) * z2)
    data_in = plan.load_bps[job] * load + F32(2e5)

    m = METRIC_INDEX
    out[m["DCGM_FI_DEV_GPU_UTIL"]] = util
    # DCGM reports milliwatt resolution; the energy counter integrates what it reports.
    power_w = np.round(power.astype(np.float64), 3)
    out[m["DCGM_FI_DEV_POWER_USAGE"]] = power_w
    out[m["DCGM_FI_DEV_GPU_TEMP"]] = np.rint(temp)
    out[m["DCGM_FI_DEV_MEMORY_TEMP"]] = np.rint(temp + plan.mem_offset + (F32(8) / tdp) * power)
    out[m["DCGM_FI_DEV_FB_USED"]] = fb_used
    out[m["DCGM_FI_DEV_FB_FREE"]] = plan.fb_total - plan.fb_reserved - fb_used
    out[m["DCGM_FI_DEV_SM_CLOCK"]] = np.rint(clock * F32(1 / 15)) * 15
    out[m["DCGM_FI_PROF_SM_ACTIVE"]] = sm_active
    out[m["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"]] = sm_active * plan.tensor_frac[job]
    out[m["DCGM_FI_PROF_NVLINK_TX_BYTES"]] = np.rint(nvlink)
    # Traffic to the NIC jitters below its cap, never above: the slot is a hard limit.
    out[m["DCGM_FI_PROF_PCIE_TX_BYTES"]] = np.rint(net * (1 - F32(0.03) * np.abs(z1)) + F32(2e5))
    out[m["DCGM_FI_PROF_PCIE_RX_BYTES"]] = np.rint(net * (1 - F32(0.03) * np.abs(z2)) + data_in)
    # The counter reads the energy up to this scrape; this scrape's power fills the next gap.
    step_mj = np.rint(power_w * (plan.interval_us / 1000)).astype(np.int64)
    counter = np.cumsum(step_mj, axis=0)
    counter -= step_mj
    counter += energy
    energy[:] = counter[-1] + step_mj[-1]
    out[m["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]] = counter
    # Ratios at the precision a person reads (and the .prom text carries): 0.8125, not 0.81249...
    for name in ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"):
        np.round(out[m[name]], 4, out=out[m[name]])
    out[m["DCGM_FI_DEV_XID_ERRORS"]] = _last_code(plan, k0, k1)
    out[m["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"]] = _count(plan.sbe, plan.sbe0, k0, k1)
    out[m["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"]] = _count(plan.dbe, plan.dbe0, k0, k1)


def _last_code(plan: TelemetryPlan, k0: int, k1: int) -> np.ndarray:
    """The last XID code each GPU reported at or before each scrape (0 before any)."""
    codes = np.zeros((k1 - k0, plan.columns), dtype=F32)
    for k, col, code in plan.xid[plan.xid[:, 0] < k1].tolist():
        codes[max(k, k0) - k0 :, col] = code
    return codes


def _count(events: np.ndarray, base: np.ndarray, k0: int, k1: int) -> np.ndarray:
    """A counter per GPU that steps by one at each event's scrape."""
    before = events[events[:, 0] <= k0]
    start = base + np.bincount(before[:, 1], minlength=len(base))
    inside = events[(events[:, 0] > k0) & (events[:, 0] < k1)]
    if not len(inside):
        return np.broadcast_to(start, (k1 - k0, len(base)))
    steps = np.zeros((k1 - k0, len(base)), dtype=np.int64)
    np.add.at(steps, (inside[:, 0] - k0, inside[:, 1]), 1)
    return start + np.cumsum(steps, axis=0)
