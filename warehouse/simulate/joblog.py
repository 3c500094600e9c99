"""The scheduler's record of the run: jobs, job_steps and job_events as the DDL shapes them.

Slurm jobs get numeric ids in submit order and the batch, extern and `0` steps `sacct` shows;
Kubernetes pods get pod names and no steps. Multi-node training jobs save a checkpoint every
30–60 minutes; how long a save takes follows from the model's size and the slowest of the job's
storage links, capped by the file system (`checkpoint_write_s` in SQL_API.md). Their step
times join job_events later (step_times.py), once the faults that slow them are drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from warehouse.simulate.config import GPUS_PER_HOST, SimConfig
from warehouse.simulate.inventory import ClusterPlan, Inventory
from warehouse.simulate.scheduler import XID_TEXT, Schedule
from warehouse.simulate.tables import timestamps, to_table
from warehouse.simulate.workload import ALL_USERS, QOS, Workload

FIRST_JOB_ID = 7_340_001
POD_ALPHABET = np.array(list("bcdfghjklmnpqrstvwxz2456789"))  # what Kubernetes suffixes use
FAILED_EXIT_CODES = ("1:0", "1:0", "1:0", "2:0", "0:6", "0:11", "137:0")
BYTES_PER_PARAM = 14  # bf16 weights + fp32 master + Adam moments


@dataclass(frozen=True)
class JobLog:
    """The tables, plus what telemetry needs: per-job labels and checkpoint save windows."""

    jobs: pa.Table
    job_steps: pa.Table
    job_events: pa.Table
    job_ids: list[str]
    account: list[str]
    #: (start, end, job) in seconds relative to cfg.start: GPUs idle while a checkpoint saves
    saves: list[tuple[float, float, int]]


def uid(user: int) -> int:
    """The Unix uid of ALL_USERS[user]."""
    return 10_001 + user


def build_joblog(
    cfg: SimConfig, inv: Inventory, work: Workload, sched: Schedule, rng: np.random.Generator
) -> JobLog:
    n = len(work)
    plans = [inv.plans[c] for c in work.cluster]
    slurm_ids = iter(range(FIRST_JOB_ID, FIRST_JOB_ID + n))
    job_ids: list[str] = []
    for job, plan in enumerate(plans):
        if plan.scheduler == "slurm":
            job_ids.append(str(next(slurm_ids)))
        else:
            rs, pod = rng.choice(POD_ALPHABET, 9), rng.choice(POD_ALPHABET, 5)
            job_ids.append(f"{work.name[job]}-{''.join(rs)}-{''.join(pod)}")
    account = [ALL_USERS[u][0] for u in work.user]
    state = sched.state
    start, end = sched.start_s, sched.end_s
    horizon = float(cfg.window_s)
    elapsed = np.where(np.isnan(start), 0.0, np.where(np.isnan(end), horizon, end) - start)
    cores = np.array([p.cpu_cores for p in plans])
    cpus = np.where(work.gpus > GPUS_PER_HOST, cores * work.nodes, cores // 8 * work.gpus)
    exit_code = np.full(n, "0:0", dtype=object)
    failed = state == "FAILED"
    exit_code[failed] = rng.choice(FAILED_EXIT_CODES, int(failed.sum()))
    exit_code[state == "CANCELLED"] = "0:15"
    exit_code[state == "OUT_OF_MEMORY"] = "0:125"
    derived = np.where(failed, exit_code, "0:0")
    by_admin = rng.random(n) < 0.15
    reason = [
        f"by {0 if by_admin[j] else uid(int(work.user[j]))}" if state[j] == "CANCELLED" else None
        for j in range(n)
    ]
    node_lists = [[inv.host_names[h] for h in sched.hosts[j]] for j in range(n)]
    slurm = np.array([p.scheduler == "slurm" for p in plans], dtype=bool)
    # Pods have no wall-time limit (workload's POD_LIMIT_S only bounds the simulation); a Slurm
    # job that asks for whole nodes gets them to itself (sbatch --exclusive, OverSubscribe=NO).
    limit = pa.array(work.limit_s.astype(np.float64), mask=~slurm)
    exclusive = pa.array(work.gpus % GPUS_PER_HOST == 0, mask=~slurm)
    jobs = to_table("jobs", {
        "job_id": job_ids,
        "job_name": list(work.name),
        "user": [ALL_USERS[u][1] for u in work.user],
        "account": account,
        "partition": [p.partition if p.scheduler == "slurm" else a
                      for p, a in zip(plans, account, strict=True)],
        "qos": [QOS[q] for q in work.qos],
        "cluster": [p.name for p in plans],
        "submit_at": timestamps(cfg.start_us, work.submit_s.astype(float)),
        "eligible_at": timestamps(cfg.start_us, work.submit_s.astype(float)),
        "start_at": timestamps(cfg.start_us, start),
        "end_at": timestamps(cfg.start_us, end),
        "elapsed_s": elapsed,
        "state": list(state),
        "state_reason": reason,
        "gpus": work.gpus,
        "gpu_type": [p.partition if p.typed_gres and p.scheduler == "slurm" else None
                     for p in plans],
        "nodes": work.nodes,
        "node_list": [hosts or None for hosts in node_lists],
        "cpus": cpus,
        "exit_code": list(exit_code),
        "derived_exit_code": list(derived),
        "time_limit_s": limit,
        "exclusive": exclusive,
    })  # fmt: skip
    steps = _steps(cfg, work, sched, job_ids, node_lists, cpus, exit_code, plans, rng)
    events, saves = _events(cfg, inv, work, sched, job_ids, rng)
    return JobLog(jobs, steps, events, job_ids, account, saves)


def _steps(
    cfg: SimConfig,
    work: Workload,
    sched: Schedule,
    job_ids: list[str],
    node_lists: list[list[str]],
    cpus: np.ndarray,
    exit_code: np.ndarray,
    plans: list[ClusterPlan],
    rng: np.random.Generator,
) -> pa.Table:
    """batch (first node), extern (all nodes) and step 0 (srun on all nodes) per started job."""
    names = ("job_id", "step_id", "step_name", "elapsed_s", "state", "gpus", "nodes",
             "node_list", "cpus", "exit_code", "max_rss_bytes", "total_cpu_s")  # fmt: skip
    rows: dict[str, list[object]] = {k: [] for k in names}
    start_s: list[float] = []
    end_s: list[float] = []
    horizon = float(cfg.window_s)
    for job in np.flatnonzero(~np.isnan(sched.start_s)).tolist():
        if plans[job].scheduler != "slurm":
            continue
        state = str(sched.state[job])
        begin, finish = float(sched.start_s[job]), float(sched.end_s[job])
        running = math.isnan(finish)
        until = horizon if running else finish
        # Slurm cancels the steps of a job that timed out or lost a node.
        step_state = {"TIMEOUT": "CANCELLED", "NODE_FAIL": "CANCELLED"}.get(state, state)
        srun_at = min(until, begin + float(rng.integers(3, 60)))
        nodes, gpus = int(work.nodes[job]), int(work.gpus[job])
        per_node_cpus = int(cpus[job]) // nodes
        rss = float(rng.uniform(0.02, 0.15)) * plans[job].memory_gb * 2**30
        for step, name, t0, st, n_nodes, n_gpus in (
            ("batch", "batch", begin, step_state, 1, min(gpus, GPUS_PER_HOST)),
            ("extern", "extern", begin, "RUNNING" if running else "COMPLETED", nodes, gpus),
            ("0", "torchrun" if gpus > 1 else "python3", srun_at, step_state, nodes, gpus),
        ):
            rows["job_id"].append(job_ids[job])
            rows["step_id"].append(step)
            rows["step_name"].append(name)
            start_s.append(t0)
            end_s.append(math.nan if running else finish)
            rows["elapsed_s"].append(until - t0)
            rows["state"].append(st)
            rows["gpus"].append(n_gpus)
            rows["nodes"].append(n_nodes)
            rows["node_list"].append(node_lists[job][:n_nodes])
            rows["cpus"].append(per_node_cpus * n_nodes)
            rows["exit_code"].append(_step_exit(st, str(exit_code[job])))
            rows["max_rss_bytes"].append(int({"0": rss, "batch": 300 * 2**20}.get(step, 2**20)))
            busy = 0.85 if step == "0" else 0.002
            rows["total_cpu_s"].append(round((until - t0) * per_node_cpus * n_nodes * busy, 3))
    cols: dict[str, object] = dict(rows)
    cols["start_at"] = timestamps(cfg.start_us, np.array(start_s))
    cols["end_at"] = timestamps(cfg.start_us, np.array(end_s))
    return to_table("job_steps", cols, rows=len(start_s))


def _step_exit(state: str, job_exit: str) -> str:
    if state in ("COMPLETED", "RUNNING"):
        return "0:0"
    return "0:15" if state == "CANCELLED" else job_exit


def _events(
    cfg: SimConfig,
    inv: Inventory,
    work: Workload,
    sched: Schedule,
    job_ids: list[str],
    rng: np.random.Generator,
) -> tuple[pa.Table, list[tuple[float, float, int]]]:
    rows: list[tuple[int, float, str, int | None, int | None, float, str]] = []
    for job, t, event, host, gpu, code in sched.job_xids:
        rows.append((job, t, event, host, gpu, float(code), f"XID {code}: {XID_TEXT[code]}"))
    saves: list[tuple[float, float, int]] = []
    horizon = float(cfg.window_s)
    multi = (work.nodes > 1) & ~np.isnan(sched.start_s)
    for job in np.flatnonzero(multi).tolist():
        plan = inv.plans[int(work.cluster[job])]
        if plan.scheduler != "slurm":
            continue
        hosts = sched.hosts[job]
        # One writer flow per node: an 802.3ad bond carries it on one link only.
        links = np.where(inv.bond_mode[hosts] == "balance-rr", inv.storage_nic_count[hosts], 1)
        node_gbs = float(np.min(inv.storage_nic_gbps[hosts] * links)) / 8
        write_gbs = min(node_gbs * len(hosts), plan.storage_gbs)
        params = min(1000.0, max(1.0, float(work.gpus[job]) * float(rng.lognormal(-1.9, 0.5))))
        size_gb = params * BYTES_PER_PARAM
        every = float(rng.integers(1800, 3601))
        begin = float(sched.start_s[job])
        finish = float(sched.end_s[job]) if not np.isnan(sched.end_s[job]) else horizon
        times = begin + every * np.arange(1, int((finish - begin) // every) + 1)
        seconds = size_gb / write_gbs * rng.lognormal(0.0, 0.15, len(times))
        for t, took in zip(times.tolist(), seconds.tolist(), strict=True):
            if t + took > finish:
                break
            rows.append((job, t, "checkpoint", None, None, round(took, 3),
                         f"{size_gb:.0f} GB, {params:.0f}B params"))  # fmt: skip
            saves.append((t, t + took, job))
    rows.sort(key=lambda r: (r[1], r[0]))
    table = to_table("job_events", {
        "job_id": [job_ids[r[0]] for r in rows],
        "ts": timestamps(cfg.start_us, np.array([r[1] for r in rows], dtype=float)),
        "event": [r[2] for r in rows],
        "host": [None if r[3] is None else inv.host_names[r[3]] for r in rows],
        "gpu": [r[4] for r in rows],
        "value": [r[5] for r in rows],
        "detail": [r[6] for r in rows],
    }, rows=len(rows))  # fmt: skip
    return table, saves
