"""Everything telemetry is computed from, fixed before the first sample is drawn.

Per reporting GPU (a "column": every GPU of a host that is not down) the constants of its model,
slot and host; per job running in the window its GPU columns, first and last scrape and how it
loads a GPU; and the sparse events (XIDs, ECC errors, checkpoint saves) as scrape indices.
Scrape k is at start + k·interval; an event at time t shows from the first scrape at or after t.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from warehouse.simulate.config import GPUS_PER_HOST, SimConfig
from warehouse.simulate.faults import Faults, FaultSpace
from warehouse.simulate.instances import host_instances
from warehouse.simulate.inventory import Inventory
from warehouse.simulate.job_labels import job_labels
from warehouse.simulate.joblog import JobLog
from warehouse.simulate.metrics import CLOCKS_MHZ, DEFAULT_CLOCKS, PCIE_X16_GBS
from warehouse.simulate.scheduler import Schedule
from warehouse.simulate.workload import Workload

F32 = np.float32


@dataclass(frozen=True)
class TelemetryPlan:
    """Inputs of the sample generator; per-job arrays carry one extra 'idle' entry at the end."""

    start_us: int
    interval_us: int
    steps: int
    key: int  # Philox key: each scrape's noise comes from its own counter block
    # per column
    host_names: pa.Array
    col_host: np.ndarray
    col_gpu: np.ndarray
    uuids: pa.Array
    model_names: pa.Array
    instances: list[str]  # per host: its scrape target, `instance` (scrape_labels.py)
    exporter_labels: bool  # whether samples carry their scrape's labels (SimConfig)
    full_names: list[str]  # per model: DCGM's modelName
    vendors: list[str]  # per model
    col_model: np.ndarray
    tdp: np.ndarray
    idle: np.ndarray
    fb_total: np.ndarray
    fb_reserved: np.ndarray
    ambient: np.ndarray
    mem_offset: np.ndarray
    clock_idle: np.ndarray
    clock_max: np.ndarray
    nic_bps: np.ndarray  # the GPU's share of the host's compute NICs, bytes/s
    pcie_bps: np.ndarray  # what the NIC's PCIe slot carries, bytes/s
    energy0_mj: np.ndarray
    # per job in the window (+ idle)
    job_k0: np.ndarray
    job_k1: np.ndarray
    job_cols: list[np.ndarray]
    util_mean: np.ndarray
    util_sd: np.ndarray
    util_min: np.ndarray
    fb_frac: np.ndarray
    nvlink_bps: np.ndarray
    net_frac: np.ndarray  # share of the NIC a job's inter-node traffic wants at full load
    load_bps: np.ndarray  # input data read from host memory at full load
    sm_eff: np.ndarray
    tensor_frac: np.ndarray
    job_rows: np.ndarray  # each window job's row in the jobs table
    labelled: np.ndarray  # whose samples carry job labels (SimConfig.job_labels)
    job_label_sets: list[dict[str, str]]  # per window job: its job labels (used where labelled)
    # sparse events as (scrape, column, ...) sorted by scrape
    saves: np.ndarray  # (k0, k1, job) rows
    xid: np.ndarray  # (k, col, code) rows
    sbe: np.ndarray  # (k, col) rows
    dbe: np.ndarray
    sbe0: np.ndarray
    dbe0: np.ndarray
    faults: Faults = field(default_factory=Faults.none)  # injected (SimConfig.faults)
    # (window job, column, kind) rows: GPUs their job leaves idle (idle.py)
    idle_gpus: np.ndarray = field(default_factory=lambda: np.empty((0, 3), dtype=np.int64))

    @property
    def columns(self) -> int:
        return len(self.col_host)


def fault_space(plan: TelemetryPlan, multi_node: np.ndarray) -> FaultSpace:
    """Where faults can go in `plan`: its scrapes, columns and window jobs (`multi_node` per
    window job; those also 60 % busy or more are the lock-step ones a slow GPU holds back)."""
    return FaultSpace(
        steps=plan.steps,
        interval_s=plan.interval_us / 1e6,
        col_host=plan.col_host.astype(np.int64),
        job_k0=plan.job_k0,
        job_k1=plan.job_k1,
        job_cols=[c[c >= 0] for c in plan.job_cols],
        lockstep=multi_node & (plan.util_mean[:-1] >= 60),
    )


def with_faults(plan: TelemetryPlan, faults: Faults) -> TelemetryPlan:
    """`plan` with `faults` injected: their SBE increments and XIDs join the plan's own."""
    sbe = np.concatenate([plan.sbe, faults.sbe])
    extra = faults.xid[faults.xid[:, 0] < plan.steps]
    xid = np.concatenate([plan.xid, extra])
    dbe = np.concatenate([plan.dbe, extra[np.isin(extra[:, 2], (48, 94, 95))][:, :2]])
    return replace(
        plan,
        sbe=sbe[np.argsort(sbe[:, 0], kind="stable")],
        xid=xid[np.argsort(xid[:, 0], kind="stable")],
        dbe=dbe[np.argsort(dbe[:, 0], kind="stable")],
        faults=faults,
    )


def first_scrape(seconds: np.ndarray, interval_us: int) -> np.ndarray:
    """Index of the first scrape at or after each time (seconds after start; may be < 0).

    >>> first_scrape(np.array([-5.0, 0.0, 59.9, 60.0, 60.5]), 60_000_000).tolist()
    [0, 0, 1, 1, 2]
    """
    micros = np.round(np.asarray(seconds, dtype=np.float64) * 1e6).astype(np.int64)
    return np.maximum(0, -(-micros // interval_us))


def build_plan(
    cfg: SimConfig,
    inv: Inventory,
    work: Workload,
    sched: Schedule,
    log: JobLog,
    rng: np.random.Generator,
) -> TelemetryPlan:
    n_hosts = len(inv.host_names)
    reporting = np.flatnonzero(inv.host_state != "down")
    col_of_gpu = np.full(n_hosts * GPUS_PER_HOST, -1, dtype=np.int64)
    gpu_ids = (reporting[:, None] * GPUS_PER_HOST + np.arange(GPUS_PER_HOST)).ravel()
    col_of_gpu[gpu_ids] = np.arange(len(gpu_ids))
    col_host_global = gpu_ids // GPUS_PER_HOST
    n_cols = len(gpu_ids)

    raw = rng.bytes(16 * n_hosts * GPUS_PER_HOST)
    uuids = [_uuid(raw[16 * g : 16 * g + 16]) for g in gpu_ids.tolist()]
    plan_of_col = inv.host_cluster[col_host_global]
    models = sorted({p.model for p in inv.plans})
    model_idx = np.array([models.index(p.model) for p in inv.plans])[plan_of_col]
    spec = [inv.specs[m] for m in models]
    tdp = np.array([s.tdp_w for s in spec], dtype=F32)[model_idx]
    idle = np.array([s.idle_w for s in spec], dtype=F32)[model_idx]
    hbm_mib = np.round(np.array([s.hbm_gb for s in spec]) * 1019.5)[model_idx]
    clocks = np.array([CLOCKS_MHZ.get(m, DEFAULT_CLOCKS) for m in models], dtype=F32)
    nic_bps = np.array([p.nic_gbps * p.nic_count / GPUS_PER_HOST / 8 * 1e9 for p in inv.plans])
    # 90 % of the slot's line rate after TLP overheads: a 400 Gb/s NIC in a Gen4 slot tops
    # out near 28 GB/s, not 50.
    pcie = np.array([PCIE_X16_GBS.get(int(g), 31.51) for g in inv.pcie_gen]) * 0.9e9
    host_air = 23 + 5 * rng.random(n_hosts)
    ambient = (host_air[col_host_global] + 0.4 * (gpu_ids % GPUS_PER_HOST)).astype(F32)
    uptime_s = rng.uniform(5, 90, n_cols) * 86400
    energy0 = np.round(uptime_s * 0.55 * tdp * 1000).astype(np.int64)

    jobs = _window_jobs(cfg, inv, work, sched, log, col_of_gpu, plan_of_col, rng)
    k = cfg.steps
    sbe_rate_s = np.where(rng.random(n_cols) < 0.02, rng.exponential(2.0, n_cols), 0.0) / 3600
    sbe0 = rng.poisson(sbe_rate_s * rng.uniform(1, 30, n_cols) * 86400)
    sbe_n = rng.poisson(sbe_rate_s * cfg.hours * 3600)
    sbe_cols = np.repeat(np.arange(n_cols), sbe_n)
    sbe_k = first_scrape(rng.uniform(0, cfg.hours * 3600, len(sbe_cols)), cfg.interval_us)
    xid = np.array([(t, col_of_gpu[h * GPUS_PER_HOST + s], c) for t, h, s, c in sched.xids])
    xid = xid.reshape(-1, 3)
    xid_k = first_scrape(xid[:, 0], cfg.interval_us)
    xid_rows = np.stack([xid_k, xid[:, 1].astype(np.int64), xid[:, 2].astype(np.int64)], 1)
    xid_rows = xid_rows[(xid_rows[:, 1] >= 0) & (xid_rows[:, 0] < k)]
    dbe_rows = xid_rows[np.isin(xid_rows[:, 2], (48, 94, 95))][:, :2]
    sbe_rows = np.stack([sbe_k, sbe_cols], 1)
    return TelemetryPlan(
        start_us=cfg.start_us,
        interval_us=cfg.interval_us,
        steps=k,
        key=int(rng.integers(0, 2**63)),
        host_names=pa.array(inv.host_names, pa.string()),
        instances=host_instances(inv.host_cluster),
        exporter_labels=cfg.exporter_labels,
        col_host=col_host_global.astype(np.int32),
        col_gpu=(gpu_ids % GPUS_PER_HOST).astype(np.int32),
        uuids=pa.array(uuids, pa.string()),
        model_names=pa.array(models, pa.string()),
        full_names=[s.full_name for s in spec],
        vendors=[s.vendor for s in spec],
        col_model=model_idx.astype(np.int32),
        tdp=tdp,
        idle=idle,
        fb_total=hbm_mib.astype(F32),
        fb_reserved=np.round(hbm_mib * 0.007).astype(F32),
        ambient=ambient,
        mem_offset=rng.uniform(2, 7, n_cols).astype(F32),
        clock_idle=clocks[model_idx, 0],
        clock_max=clocks[model_idx, 1],
        nic_bps=nic_bps[plan_of_col].astype(F32),
        pcie_bps=pcie[col_host_global].astype(F32),
        energy0_mj=energy0,
        sbe=sbe_rows[np.argsort(sbe_rows[:, 0], kind="stable")],
        dbe=dbe_rows,
        xid=xid_rows,
        sbe0=sbe0.astype(np.int64),
        dbe0=np.zeros(n_cols, dtype=np.int64),
        **jobs,
    )


def _window_jobs(
    cfg: SimConfig,
    inv: Inventory,
    work: Workload,
    sched: Schedule,
    log: JobLog,
    col_of_gpu: np.ndarray,
    plan_of_col: np.ndarray,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Per-job load parameters for the jobs that run during at least one scrape."""
    window_end = cfg.steps * cfg.interval_us / 1e6
    end = np.where(np.isnan(sched.end_s), np.inf, sched.end_s)
    started = ~np.isnan(sched.start_s)
    k0 = first_scrape(np.where(started, sched.start_s, 0.0), cfg.interval_us)
    finite_end = np.where(np.isinf(end), window_end, end)
    k1 = np.minimum(first_scrape(finite_end, cfg.interval_us), cfg.steps)
    chosen = np.flatnonzero(started & (sched.start_s < window_end) & (end > 0) & (k0 < k1))
    index_of = {int(j): i for i, j in enumerate(chosen)}
    n = len(chosen)
    gpus = work.gpus[chosen]
    serving = np.array([inv.plans[c].scheduler == "kubernetes" for c in work.cluster[chosen]])
    multi_node = work.nodes[chosen] > 1
    light = np.isin(work.name[chosen], ("jupyter", "debug", "eval-harness"))
    scaleup = np.array([inv.specs[inv.plans[c].model].scaleup_gbs for c in work.cluster[chosen]])
    mean = np.where(multi_node, rng.uniform(85, 97, n), rng.uniform(55, 95, n))
    mean = np.where(serving, rng.uniform(25, 65, n), mean)
    mean = np.where(light, rng.uniform(3, 30, n), mean)
    sd = np.where(serving | light, 10.0, 3.0)
    cols: list[np.ndarray] = []
    for job in chosen.tolist():
        gpu = (sched.hosts[job][:, None] * GPUS_PER_HOST + np.array(sched.slots[job])).ravel()
        cols.append(col_of_gpu[gpu])
    labelled, label_sets = job_labels(
        cfg.job_labels,
        serving,
        [log.job_ids[j] for j in chosen],
        containers=[str(work.name[j]) for j in chosen],
        namespaces=[log.account[j] for j in chosen],
    )
    saves = [(t0, t1, index_of[j]) for t0, t1, j in log.saves if j in index_of]
    save_rows = np.array(saves, dtype=np.float64).reshape(-1, 3)
    save_k = np.stack([
        first_scrape(save_rows[:, 0], cfg.interval_us),
        first_scrape(save_rows[:, 1], cfg.interval_us),
        save_rows[:, 2].astype(np.int64),
    ], 1)  # fmt: skip
    save_k = save_k[(save_k[:, 0] < save_k[:, 1]) & (save_k[:, 0] < cfg.steps)]

    def with_idle(values: np.ndarray, idle: float = 0.0) -> np.ndarray:
        return np.append(values, idle).astype(F32)

    return {
        "job_k0": k0[chosen],
        "job_k1": k1[chosen],
        "job_cols": cols,
        "util_mean": with_idle(mean),
        "util_sd": with_idle(sd),
        "util_min": with_idle(np.ones(n)),
        "fb_frac": with_idle(np.where(light, rng.uniform(0.05, 0.5, n),
                                      np.where(serving, rng.uniform(0.86, 0.92, n),
                                               rng.uniform(0.7, 0.97, n)))),
        "nvlink_bps": with_idle(np.where(gpus > 1, rng.uniform(0.1, 0.45, n), 0.0)
                                * scaleup / 2 * 1e9),
        "net_frac": with_idle(np.where(multi_node, rng.uniform(0.4, 1.0, n), 0.0)),
        "load_bps": with_idle(rng.uniform(0.1, 3.0, n) * 1e9),
        "sm_eff": with_idle(rng.uniform(0.55, 0.9, n)),
        "tensor_frac": with_idle(np.where(serving, rng.uniform(0.15, 0.45, n),
                                          rng.uniform(0.35, 0.75, n))),
        "job_rows": chosen,
        "labelled": labelled,
        "job_label_sets": label_sets,
        "saves": save_k,
    }  # fmt: skip


def _uuid(raw: bytes) -> str:
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
