"""Judging a failure predictor by lead time at an alert budget (bench/bench_predict.py).

A predictor raises alert episodes: a node flagged from `start_s` to `end_s`, at 'watch' or
'drain'. A failure is caught when an episode of its node began strictly before it and had not
ended: start < failure ≤ end — an alert raised by the failure's own XID (at the failure) catches
nothing. Its lead time is the failure's time less the start of the earliest such episode, so it
is measured against the failure itself, not against the first symptom. An episode is true when
it catches at least one failure.

GPU-hours are priced with the checkpoint models: a failure a job meets unwarned costs its GPUs
half a checkpoint interval of rework plus a restart (Daly's interval at the job's MTBF); acting
on an alert costs the node's 8 GPUs for `drain_h` and the job one restart (it is moved off).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from udfs.checkpoint import daly_interval_s

GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Episode:
    node: str
    start_s: float
    end_s: float
    level: str = "watch"  # 'watch' | 'drain'


@dataclass(frozen=True)
class Price:
    """What a failure and an alert cost (see the module docstring)."""

    job_gpus: int = 1024
    checkpoint_s: float = 60.0
    restart_s: float = 600.0
    drain_h: float = 4.0
    gpu_hours_per_failure: float = 50_700.0

    def failure_gpu_h(self) -> float:
        mtbf_s = self.gpu_hours_per_failure / self.job_gpus * 3600
        tau = float(daly_interval_s(self.checkpoint_s, mtbf_s))
        return self.job_gpus * (tau / 2 + self.restart_s) / 3600

    def alert_gpu_h(self) -> float:
        return GPUS_PER_NODE * self.drain_h + self.job_gpus * self.restart_s / 3600


@dataclass(frozen=True)
class Judged:
    name: str
    alerts: int
    true_alerts: int
    caught: int
    failures: int
    caught_warned: int  # of the failures that had a precursor
    warned: int
    lead_p10_h: float
    lead_p50_h: float
    lead_warned_p50_h: float  # median lead on the failures that had a precursor
    gpu_days: float
    false_watch: int
    false_drain: int
    saved_gpu_h: float
    cost_gpu_h: float

    @property
    def recall(self) -> float:
        return self.caught / self.failures if self.failures else float("nan")

    @property
    def recall_warned(self) -> float:
        return self.caught_warned / self.warned if self.warned else float("nan")

    @property
    def precision(self) -> float:
        return self.true_alerts / self.alerts if self.alerts else float("nan")

    def per_1k_gpu_days(self, count: int) -> float:
        return 1000 * count / self.gpu_days


def merged(episodes: Iterable[Episode]) -> list[Episode]:
    """Overlapping episodes of a node as one (an alert raised again while it stands is not a
    new alert); the merged one is 'drain' if any part was."""
    by_node: dict[str, list[Episode]] = defaultdict(list)
    for e in episodes:
        by_node[e.node].append(e)
    out: list[Episode] = []
    for node, found in by_node.items():
        found.sort(key=lambda e: e.start_s)
        current = found[0]
        for e in found[1:]:
            if e.start_s <= current.end_s:
                level = "drain" if "drain" in (e.level, current.level) else "watch"
                current = Episode(node, current.start_s, max(current.end_s, e.end_s), level)
            else:
                out.append(current)
                current = e
        out.append(current)
    return sorted(out, key=lambda e: (e.start_s, e.node))


def judge(
    name: str,
    episodes: Sequence[Episode],
    failures: Sequence[tuple[str, float, bool]],
    gpu_days: float,
    price: Price | None = None,
) -> Judged:
    """`episodes` (merged) against `failures` (node, time in s, had a precursor)."""
    price = price or Price()
    by_node: dict[str, list[Episode]] = defaultdict(list)
    for e in episodes:
        by_node[e.node].append(e)
    true_episodes: set[int] = set()
    leads: list[float] = []
    warned_leads: list[float] = []
    caught = caught_warned = 0
    for node, at, warned in failures:
        covering = [e for e in by_node.get(node, ()) if e.start_s < at <= e.end_s]
        if not covering:
            continue
        caught += 1
        caught_warned += warned
        leads.append((at - min(e.start_s for e in covering)) / 3600)
        if warned:
            warned_leads.append(leads[-1])
        true_episodes.update(id(e) for e in covering)
    false = [e for e in episodes if id(e) not in true_episodes]
    lead = np.array(leads) if leads else np.array([np.nan])
    return Judged(
        name=name,
        alerts=len(episodes),
        true_alerts=len(true_episodes),
        caught=caught,
        failures=len(failures),
        caught_warned=caught_warned,
        warned=sum(1 for f in failures if f[2]),
        lead_p10_h=float(np.quantile(lead, 0.1)),
        lead_p50_h=float(np.quantile(lead, 0.5)),
        lead_warned_p50_h=float(np.median(warned_leads)) if warned_leads else float("nan"),
        gpu_days=gpu_days,
        false_watch=sum(1 for e in false if e.level == "watch"),
        false_drain=sum(1 for e in false if e.level == "drain"),
        saved_gpu_h=caught * price.failure_gpu_h(),
        cost_gpu_h=len(episodes) * price.alert_gpu_h(),
    )
