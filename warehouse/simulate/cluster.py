"""One simulation's output (`SimulatedCluster`) and the pipeline that builds it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from warehouse.simulate.config import SimConfig
from warehouse.simulate.faults import draw_faults
from warehouse.simulate.idle import draw_idle
from warehouse.simulate.inventory import (
    build_inventory,
    clusters_table,
    nodes_table,
    sites_table,
)
from warehouse.simulate.joblog import build_joblog
from warehouse.simulate.nccl import probe_results
from warehouse.simulate.scheduler import schedule
from warehouse.simulate.step_times import merge_events, step_time_events
from warehouse.simulate.telemetry import Observer, batches, sample_count
from warehouse.simulate.telemetry_plan import TelemetryPlan, build_plan, fault_space, with_faults
from warehouse.simulate.workload import generate_workload

#: Tags that give each step of the pipeline a generator of its own.
_INVENTORY, _WORKLOAD, _SCHEDULER, _JOBLOG, _TELEMETRY, _FAULTS, _NCCL, _STEP_TIMES, _IDLE = range(
    9
)


@dataclass(frozen=True)
class SimulatedCluster:
    """One simulation's output: tables named and typed as the DDL, telemetry on demand."""

    config: SimConfig
    sites: pa.Table
    clusters: pa.Table
    nodes: pa.Table
    jobs: pa.Table
    job_steps: pa.Table
    job_events: pa.Table
    telemetry: TelemetryPlan
    #: per jobs row, the GPU indices it holds on each of its hosts (as `node_list`); () if none
    gpu_slots: tuple[tuple[int, ...], ...] = ()
    #: nccl-tests probe results (SimConfig.nccl_probe_s), shaped like `nccl_results`
    nccl_results: pa.Table | None = None

    @property
    def sample_count(self) -> int:
        """Rows `telemetry_batches` yields in total."""
        return sample_count(self.telemetry)

    def telemetry_batches(
        self, max_rows: int = 2_000_000, observe: Observer | None = None
    ) -> Iterator[pa.RecordBatch]:
        """`gpu_metrics` rows in time order, at most `max_rows` a batch (whole scrapes).

        `observe` sees each batch's job occupancy and values as they are drawn (see telemetry).
        """
        return batches(self.telemetry, max_rows, observe)

    def tables(self) -> dict[str, pa.Table]:
        """The eager tables by their DDL name."""
        return {
            "sites": self.sites,
            "clusters": self.clusters,
            "nodes": self.nodes,
            "jobs": self.jobs,
            "job_steps": self.job_steps,
            "job_events": self.job_events,
        } | ({"nccl_results": self.nccl_results} if self.nccl_results is not None else {})


def simulate_cluster(cfg: SimConfig) -> SimulatedCluster:
    """Build the cluster `cfg` describes; the same config always gives the same cluster."""

    def rng(tag: int) -> np.random.Generator:
        return np.random.default_rng([cfg.seed, tag])

    inv = build_inventory(cfg, rng(_INVENTORY))
    work = generate_workload(cfg, inv, rng(_WORKLOAD))
    sched = schedule(cfg, inv, work, cfg.seed)
    log = build_joblog(cfg, inv, work, sched, rng(_JOBLOG))
    plan = build_plan(cfg, inv, work, sched, log, rng(_TELEMETRY))
    if cfg.faults:
        space = fault_space(plan, work.nodes[plan.job_rows] > 1)
        plan = with_faults(plan, draw_faults(space, cfg.faults, rng(_FAULTS)))
    slow_jobs = {f.job for f in plan.faults.truth if f.kind == "slow_gpu"}
    plan = replace(plan, idle_gpus=draw_idle(plan, cfg, rng(_IDLE), spare=slow_jobs))
    # Step times last: a slow GPU slows its job, and drawing them changes nothing drawn before.
    slowed = [
        (int(plan.job_rows[f.job]), f.k0 * cfg.interval_s, f.k1 * cfg.interval_s, 1 - f.magnitude)
        for f in plan.faults.truth
        if f.kind == "slow_gpu"
    ]
    steps = step_time_events(cfg, inv, work, sched, log, slowed, rng(_STEP_TIMES))
    nccl = None
    if cfg.nccl_probe_s:
        nccl = probe_results(cfg, inv, plan.faults.bad_nics, rng(_NCCL), cfg.nccl_probe_s)
    return SimulatedCluster(
        config=cfg,
        sites=sites_table(inv),
        clusters=clusters_table(inv),
        nodes=nodes_table(inv, sched.host_state),
        jobs=log.jobs,
        job_steps=log.job_steps,
        job_events=merge_events(log.job_events, steps),
        telemetry=plan,
        gpu_slots=tuple(sched.slots),
        nccl_results=nccl,
    )
