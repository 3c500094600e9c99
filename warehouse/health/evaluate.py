"""How well `wanka health` finds faults whose truth is known: a simulated cluster with injected
faults (warehouse/simulate/faults.py) is loaded, the rules run, and their findings are scored
against the truth per fault kind.

    load(engine, cluster)                       # telemetry, nodes, nccl probes; gpu_windows
    scored = score(health.findings(cur), truth)  # truth: the cluster's faults table
    print(render(scored))

A fault is detected when a rule of its kind flags its GPU (its host, for a host's fault) no
earlier than its start and within `within` windows of it; a flag of a kind's rules on a GPU or
host without a fault of that kind (or before it started) is a false positive. The confusion
table counts, per true kind, the faults each kind's rules flagged at any time after the start,
and, in the row `none`, the flagged GPUs and hosts with no fault at all.

Detection is timed from the fault's first symptom; what an operator needs is time before the
failure. For the kinds that end in one (`ecc_climb`: its XID on the scrape before `end_at`), the
lead column gives the minutes from the first flag to the failure itself, for the faults flagged
before it failed (a flag at or after the failure is no warning).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from warehouse.dynamic.shipped import install_shipped
from warehouse.health import findings as health
from warehouse.kernel.arrow_tables import insert_arrow
from warehouse.kernel.engine import Engine
from warehouse.kernel.transactions import transaction
from warehouse.simulate import SimulatedCluster
from warehouse.simulate.faults import KINDS, WINDOW_S
from warehouse.simulate.truth import faults_table, truth_job_ids
from warehouse.tsdb.append import append

#: The fault kind each rule finds; the others find faults the simulator does not inject.
KIND_OF_RULE = {
    "straggler": "slow_gpu",
    "sbe_climb": "ecc_climb", "xid_drain": "ecc_climb", "xid_reset": "ecc_climb",
    "ecc_dbe": "ecc_climb", "repeated_hw_xid": "ecc_climb",
    "thermal_outlier": "thermal", "thermal_throttle": "thermal",
    "silent_host": "silent_host",
    "nccl_busbw": "bad_nic",
}  # fmt: skip
HOST_KINDS = ("silent_host", "bad_nic")
#: Kinds whose fault ends in a failure: its XID on the last scrape of the fault.
FAILING = ("ecc_climb",)
OTHER = "other"


def load(engine: Engine, cluster: SimulatedCluster, max_rows: int = 2_000_000) -> int:
    """Load `cluster`'s nodes, nccl probes and telemetry (one transaction per batch, as an
    ingest), then refresh gpu_windows and health_findings; returns the samples stored."""
    install_shipped(engine)
    cur = engine.cursor()
    try:
        insert_arrow(cur, "nodes", cluster.nodes)
        if cluster.nccl_results is not None:
            insert_arrow(cur, "nccl_results", cluster.nccl_results)
        stored = 0
        for batch in cluster.telemetry_batches(max_rows):
            with transaction(cur):
                stored += append(cur, pa.Table.from_batches([batch])).gpu
        health.refresh_inputs(cur)
        return stored
    finally:
        cur.close()


def truth(cluster: SimulatedCluster) -> list[dict[str, Any]]:
    """The injected faults as rows of truth/faults.csv."""
    job_ids = truth_job_ids(cluster.jobs, cluster.clusters)
    rows: list[dict[str, Any]] = faults_table(cluster.telemetry, job_ids).to_pylist()
    return rows


@dataclass(frozen=True)
class KindScore:
    kind: str
    faults: int
    detected: int  # within `within` windows of the start
    late: int  # flagged later than that
    flagged: int  # units the kind's rules flagged
    false_positives: int
    delays_windows: tuple[float, ...]  # of the detected ones
    leads_min: tuple[float, ...] = ()  # first flag to the failure, of those flagged before it

    @property
    def precision(self) -> float:
        return (self.flagged - self.false_positives) / self.flagged if self.flagged else 1.0

    @property
    def recall(self) -> float:
        return self.detected / self.faults if self.faults else 1.0


@dataclass(frozen=True)
class Score:
    kinds: tuple[KindScore, ...]
    confusion: dict[str, dict[str, int]]  # true kind (or 'none') -> detected kind -> count
    gpus: int
    healthy_flagged: int  # GPUs with no fault that some rule flagged (host findings: its GPUs)

    def kind(self, name: str) -> KindScore:
        return next(k for k in self.kinds if k.kind == name)


def _unit(kind: str, host: str, gpu: int | None) -> tuple[str, int | None]:
    return (host, None) if kind in HOST_KINDS else (host, gpu)


def score(
    findings: list[dict[str, Any]],
    faults: list[dict[str, Any]],
    gpus: int,
    within: int = 5,
    gpus_per_host: int = 8,
    interval_s: float = 0.0,
) -> Score:
    """Score `findings` (health.findings) against `faults` (truth rows) on a fleet of `gpus`;
    `interval_s`, the scrape interval, places a failure on the scrape before `end_at`."""
    first: dict[tuple[str, str, int | None], datetime] = {}  # (kind, unit) -> first flag
    for f in findings:
        kind = KIND_OF_RULE.get(f["rule"], OTHER)
        key = (kind, *_unit(kind, f["host"], f["gpu"]))
        first[key] = min(first.get(key, f["flagged_at"]), f["flagged_at"])
    starts = {(t["kind"], *_unit(t["kind"], t["host"], t["gpu"])): t["start_at"] for t in faults}
    fails = {
        (t["kind"], *_unit(t["kind"], t["host"], t["gpu"])): t["end_at"]
        - timedelta(seconds=interval_s)
        for t in faults
        if t["kind"] in FAILING and t["end_at"] is not None
    }
    kinds = []
    for kind in KINDS:
        mine = {k: v for k, v in starts.items() if k[0] == kind}
        flags = {k: v for k, v in first.items() if k[0] == kind}
        window = timedelta(seconds=WINDOW_S)
        delays = [(flags[k] - s) / window for k, s in mine.items() if k in flags and flags[k] >= s]
        on_time = [d for d in delays if d <= within]
        wrong = [k for k, v in flags.items() if k not in mine or v < mine[k]]
        leads = [
            (fails[k] - flags[k]).total_seconds() / 60
            for k in mine
            if k in fails and k in flags and mine[k] <= flags[k] < fails[k]
        ]
        kinds.append(KindScore(kind, len(mine), len(on_time), len(delays) - len(on_time),
                               len(flags), len(wrong), tuple(sorted(on_time)),
                               tuple(sorted(leads))))  # fmt: skip
    confusion: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (kind, host, gpu), start in starts.items():
        for (found, fhost, fgpu), at in first.items():
            same = fhost == host and (gpu is None or fgpu is None or fgpu == gpu)
            if same and at >= start:
                confusion[kind][found] += 1
    sick_hosts = {host for _, host, gpu in starts if gpu is None}
    sick_gpus = {(host, gpu) for _, host, gpu in starts if gpu is not None}
    healthy: set[tuple[str, int]] = set()
    for found, host, gpu in first:
        gpus_here = range(gpus_per_host) if gpu is None else (gpu,)
        fine = [
            (host, g) for g in gpus_here if host not in sick_hosts and (host, g) not in sick_gpus
        ]
        if len(fine) == len(gpus_here):
            confusion["none"][found] += 1
        healthy.update(fine)
    return Score(tuple(kinds), {k: dict(v) for k, v in confusion.items()}, gpus, len(healthy))


def render(scored: Score, within: int = 5) -> str:
    """The per-kind table and the confusion table, as text."""
    lines = [
        f"{'fault kind':<12} {'faults':>6} {'found':>6} {'late':>5} {'flagged':>7} "
        f"{'false+':>6} {'precision':>9} {'recall':>6}  {'lead to failure, min':>20}  "
        "delay, windows (median / max)"
    ]
    for k in scored.kinds:
        delay = sorted(k.delays_windows)
        med = f"{delay[len(delay) // 2]:.1f} / {delay[-1]:.1f}" if delay else "-"
        lead = (
            f"{k.leads_min[len(k.leads_min) // 2]:.0f} (median of {len(k.leads_min)})"
            if k.leads_min
            else "-"
        )
        lines.append(
            f"{k.kind:<12} {k.faults:>6} {k.detected:>6} {k.late:>5} {k.flagged:>7} "
            f"{k.false_positives:>6} {k.precision:>9.3f} {k.recall:>6.3f}  {lead:>20}  {med}"
        )
    columns = [*KINDS, OTHER]
    lines += ["", "confusion: true kind (rows) x kind of the rule that flagged it (columns), "
                  "any time after the start"]  # fmt: skip
    lines.append(f"{'':<12} " + " ".join(f"{c:>11}" for c in columns))
    for row in [*KINDS, "none"]:
        cells = scored.confusion.get(row, {})
        lines.append(f"{row:<12} " + " ".join(f"{cells.get(c, 0):>11}" for c in columns))
    share = scored.healthy_flagged / scored.gpus if scored.gpus else 0.0
    lines.append("")
    lines.append(f"GPUs without a fault flagged: {scored.healthy_flagged} of {scored.gpus:,} "
                 f"({share:.2%}); detected = flagged within {within} windows of "
                 f"{WINDOW_S // 60} min")  # fmt: skip
    return "\n".join(lines)
