"""What users submit: arrivals, sizes, durations, teams, time limits and how each job would end.

Shapes follow published GPU-cluster traces (Philly, Helios, Acme): most jobs use one node and
run minutes, a few use hundreds of GPUs for days and take most of the GPU-hours; durations are
lognormal; arrivals are Poisson with a daily cycle. The arrival rate is set per cluster so the
GPU-hours offered are `target_load` of the cluster's capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from warehouse.simulate.config import GPUS_PER_HOST, SimConfig
from warehouse.simulate.inventory import ClusterPlan, Inventory

TEAMS = ("llm-pretrain", "multimodal", "rl", "infra", "inference", "research")
USERS: dict[str, tuple[str, ...]] = {
    "llm-pretrain": ("wzhang", "jchen", "mrossi", "aklein", "lwang", "tnguyen", "spatel"),
    "multimodal": ("yli", "jkim", "ogarcia", "hsato", "fmueller"),
    "rl": ("dliu", "rsingh", "ebrown", "xzhao"),
    "infra": ("opsbot", "jdoe", "mlopez"),
    "inference": ("svc-vllm", "svc-triton", "aahmed", "pwu"),
    "research": ("intern01", "intern02", "nkowalski", "bsmith", "cjones", "yhuang", "ttanaka"),
}
#: Every user with a stable uid, in USERS order (uid = 10001, 10002, ...).
ALL_USERS: tuple[tuple[str, str], ...] = tuple((t, u) for t in TEAMS for u in USERS[t])
JOB_NAMES: dict[str, tuple[str, ...]] = {
    "llm-pretrain": ("pretrain-70b", "pretrain-moe-8x22b", "pretrain-405b", "lr-ablation"),
    "multimodal": ("vlm-sft", "clip-pretrain", "video-diffusion", "asr-finetune"),
    "rl": ("ppo-rollout", "grpo-math", "reward-model", "dpo-sweep"),
    "infra": ("nccl-tests", "burn-in", "dcgm-diag", "ib-write-bw"),
    "inference": ("vllm-serve", "triton-serve", "batch-infer", "embed-index"),
    "research": ("jupyter", "eval-harness", "hparam-sweep", "debug"),
}
QOS = ("high", "normal", "low")  # index = priority rank

TRAIN_SIZES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
TRAIN_WEIGHTS = np.array([0.40, 0.08, 0.10, 0.22, 0.06, 0.05, 0.04, 0.025, 0.015, 0.007, 0.003])
SERVE_SIZES = np.array([1, 2, 4, 8])
SERVE_WEIGHTS = np.array([0.50, 0.20, 0.15, 0.15])
#: Time limits users pick (sbatch --time); a job gets the smallest that covers its guess.
TIME_LIMITS_S = np.array([0.5, 1, 2, 4, 8, 12, 24, 48, 72, 168]) * 3600
POD_LIMIT_S = 30 * 86400  # pods have no wall-time limit; this only bounds the simulation

PLANNED = ("COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY")
TRAIN_PLANNED_P = (0.75, 0.13, 0.09, 0.03)
SERVE_PLANNED_P = (0.82, 0.06, 0.10, 0.02)


@dataclass(frozen=True)
class Workload:
    """Submitted jobs in submit order; each array has one entry per job."""

    cluster: np.ndarray  # index into Inventory.plans
    submit_s: np.ndarray  # int64 seconds relative to cfg.start (negative in the warm-up)
    gpus: np.ndarray
    nodes: np.ndarray
    limit_s: np.ndarray
    run_s: np.ndarray  # how long it runs once started, unless a failure ends it first
    planned: np.ndarray  # 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'OUT_OF_MEMORY' | 'TIMEOUT'
    patience_s: np.ndarray  # a CANCELLED job still pending this long after submit is withdrawn
    qos: np.ndarray  # index into QOS
    user: np.ndarray  # index into ALL_USERS
    name: np.ndarray  # job name (object array)

    def __len__(self) -> int:
        return len(self.submit_s)


def generate_workload(cfg: SimConfig, inv: Inventory, rng: np.random.Generator) -> Workload:
    """Draw every job submitted from start − warm-up to the end of the window."""
    parts: list[dict[str, np.ndarray]] = []
    horizon = cfg.warmup_s + cfg.window_s
    for index, plan in enumerate(inv.plans):
        up_hosts = int(np.sum((inv.host_cluster == index) & (inv.host_state == "up")))
        if up_hosts == 0:
            continue
        calibration = _draw_jobs(20_000, plan, up_hosts, rng)
        gpu_s = float(np.mean(calibration["gpus"] * calibration["run_s"]))
        per_s = cfg.target_load * up_hosts * GPUS_PER_HOST / gpu_s
        # Thinning gives a daily cycle (peak mid-afternoon, UTC) with the same mean rate.
        candidates = rng.poisson(per_s * horizon * 1.3)
        t = rng.uniform(0, horizon, candidates) - cfg.warmup_s
        hour = (cfg.start.timestamp() + t) / 3600 % 24
        keep = rng.random(candidates) * 1.3 < 1 + 0.3 * np.sin(2 * np.pi * (hour - 9) / 24)
        t = np.sort(np.floor(t[keep]).astype(np.int64))
        jobs = _draw_jobs(len(t), plan, up_hosts, rng)
        jobs["submit_s"] = t
        jobs["cluster"] = np.full(len(t), index, dtype=np.int32)
        parts.append(jobs)
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    if not merged:
        raise ValueError("no cluster has a host in state 'up'; nothing can be scheduled")
    order = np.lexsort((merged["cluster"], merged["submit_s"]))
    return Workload(**{k: v[order] for k, v in merged.items()})


def _draw_jobs(
    n: int, plan: ClusterPlan, up_hosts: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    serving = plan.scheduler == "kubernetes"
    sizes, weights = (SERVE_SIZES, SERVE_WEIGHTS) if serving else (TRAIN_SIZES, TRAIN_WEIGHTS)
    # A job may ask for at most half of the cluster (and never more than it has whole nodes).
    fits = (sizes <= max(GPUS_PER_HOST, up_hosts * GPUS_PER_HOST // 2)) & (
        (sizes <= GPUS_PER_HOST) | (sizes // GPUS_PER_HOST <= up_hosts)
    )
    gpus = rng.choice(sizes[fits], size=n, p=weights[fits] / weights[fits].sum())
    nodes = np.maximum(1, gpus // GPUS_PER_HOST)
    multi = gpus > GPUS_PER_HOST
    if serving:
        natural = rng.lognormal(math.log(5 * 3600), 1.3, n)
    else:
        median = np.where(multi, 3 * 3600.0, 1800.0)
        natural = median * rng.lognormal(0.0, np.where(multi, 1.2, 1.5))
    natural = np.clip(natural, 60, 7 * 86400)

    planned = rng.choice(PLANNED, size=n, p=SERVE_PLANNED_P if serving else TRAIN_PLANNED_P)
    planned = planned.astype(object)
    fraction = np.ones(n)
    failed, oom, cancelled = planned == "FAILED", planned == "OUT_OF_MEMORY", planned == "CANCELLED"
    # Crashes come early more often than late: log-uniform over the natural duration.
    fraction[failed] = np.exp(rng.uniform(math.log(0.02), 0, failed.sum()))
    fraction[oom] = np.exp(rng.uniform(math.log(0.005), math.log(0.5), oom.sum()))
    fraction[cancelled] = rng.uniform(0.05, 1.0, cancelled.sum())
    run = np.maximum(10.0, natural * fraction)

    if serving:
        limit = np.full(n, float(POD_LIMIT_S))
    else:
        # Users pad their guess; about one in sixteen guesses short and the job times out.
        pad = np.where(rng.random(n) < 0.06, rng.uniform(0.4, 0.95, n), rng.lognormal(0.5, 0.35, n))
        pick = np.minimum(np.searchsorted(TIME_LIMITS_S, natural * pad), len(TIME_LIMITS_S) - 1)
        limit = TIME_LIMITS_S[pick]
    timeout = run > limit
    planned[timeout] = "TIMEOUT"
    run = np.minimum(run, limit)
    patience = np.where(cancelled, rng.lognormal(math.log(2 * 3600), 1.0, n), np.inf)

    team = _pick_team(gpus, serving, rng)
    user = np.empty(n, dtype=np.int32)
    name = np.empty(n, dtype=object)
    qos = np.full(n, 1, dtype=np.int32)
    for t_index, team_name in enumerate(TEAMS):
        mine = np.flatnonzero(team == t_index)
        members = [i for i, (t, _) in enumerate(ALL_USERS) if t == team_name]
        zipf = 1.0 / np.arange(1, len(members) + 1)
        user[mine] = rng.choice(members, size=len(mine), p=zipf / zipf.sum())
        name[mine] = rng.choice(np.array(JOB_NAMES[team_name], dtype=object), size=len(mine))
        if team_name == "infra":
            qos[mine] = 0
        elif team_name == "research":
            qos[mine] = np.where(rng.random(len(mine)) < 0.6, 2, 1)
        elif team_name == "llm-pretrain":
            qos[mine] = np.where(gpus[mine] >= 128, 0, 1)
    return {
        "gpus": gpus.astype(np.int32),
        "nodes": nodes.astype(np.int32),
        "limit_s": limit.astype(np.int64),
        "run_s": np.round(run).astype(np.int64),
        "planned": planned,
        "patience_s": patience,
        "qos": qos,
        "user": user,
        "name": name,
    }


def _pick_team(gpus: np.ndarray, serving: bool, rng: np.random.Generator) -> np.ndarray:
    """Team of each job: big jobs are pre-training, small ones research, pods inference."""
    n = len(gpus)
    #              llm-pretrain multimodal rl   infra inference research
    big = np.array([0.70, 0.20, 0.10, 0.00, 0.00, 0.00])
    mid = np.array([0.30, 0.30, 0.25, 0.05, 0.00, 0.10])
    small = np.array([0.10, 0.15, 0.20, 0.15, 0.05, 0.35])
    serve = np.array([0.00, 0.00, 0.00, 0.05, 0.85, 0.10])
    if serving:
        return rng.choice(len(TEAMS), size=n, p=serve)
    team = rng.choice(len(TEAMS), size=n, p=small)
    for mask, p in ((gpus >= 128, big), ((gpus > 8) & (gpus < 128), mid)):
        team[mask] = rng.choice(len(TEAMS), size=int(mask.sum()), p=p)
    return team
