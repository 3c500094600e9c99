"""An honest fleet failure history: what real fleets show, for judging fault prediction.

The telemetry simulation (faults.py) injects a handful of faults into hours of scrapes, each
`ecc_climb` with a warning by construction. This module draws what a fleet sees over weeks, at
the event level, with the features that make prediction hard (docs/faults.md gives the sources):

- a fleet rate near Llama 3's: one failure per `gpu_hours_per_failure` GPU-hours (50,700);
- failures without any precursor: by default 75 % of them (on a 504-GPU B200 cluster 2 of 10 XID
  failures showed any sign beforehand), and every XID 79 (fell off the bus) and 119 (GSP
  timeout) among them; the others end in XID 48 (DBE), 74 (NVLink) or 95;
- failures with a precursor (XID 94/95/48 after corrected ECC errors accelerating, rows remapped
  and an XID 63 page retirement over the `lead` hours before);
- harmless bursts of corrected ECC errors that lead nowhere (`sbe_bursts_per_1k_gpu_days`);
- lemon servers: after a repair a node fails again within 7 days with probability
  `refault_7d` (InfiniteHBD: 31 %), so failures cluster on a few servers.

The base rate is lowered so that, refaults included, the fleet's rate is the one asked for.
`write_fleet` writes it in the real formats — `faults/tickets.csv` (an operator's ticket export:
node, start, end, kind, description, for `wanka ingest faults`) and `dcgm/fleet_events.prom`
(dcgm-exporter text: each event a sample before and one at it, so `wanka ingest dcgm` finds the
XIDs and counter increases) — and its truth: `truth/failures.csv` (every failure: node, gpu, at,
xid, precursor, lead_h, refault) and `truth/failures.json` (the config and the counts).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from warehouse.simulate.config import DEFAULT_START, GPUS_PER_HOST, InvalidConfig

SUDDEN_XIDS = (79, 119, 74, 48)
SUDDEN_P = (0.45, 0.30, 0.15, 0.10)
WARNED_XIDS = (94, 95, 48)


@dataclass(frozen=True)
class FleetConfig:
    """The parameters of a fleet's failure history (see the module docstring)."""

    gpus: int = 10_000
    days: float = 30.0
    start: datetime = DEFAULT_START
    seed: int = 0
    gpu_hours_per_failure: float = 50_700.0
    precursor_share: float = 0.25
    lead_h_median: float = 6.0
    refault_7d: float = 0.30
    sbe_bursts_per_1k_gpu_days: float = 2.0
    repair_h_median: float = 16.8

    def __post_init__(self) -> None:
        for name in ("precursor_share", "refault_7d"):
            value = getattr(self, name)
            if not 0 <= value < 1 or (name == "precursor_share" and value > 1):
                raise InvalidConfig(f"{name} is a share in [0, 1), got {value}")
        for name in ("days", "gpu_hours_per_failure", "lead_h_median", "repair_h_median"):
            if not getattr(self, name) > 0:
                raise InvalidConfig(f"{name} must be > 0, got {getattr(self, name)}")
        if self.gpus < GPUS_PER_HOST or self.sbe_bursts_per_1k_gpu_days < 0:
            raise InvalidConfig("gpus must be at least 8 and sbe_bursts_per_1k_gpu_days >= 0")

    @property
    def hosts(self) -> int:
        return -(-self.gpus // GPUS_PER_HOST)


@dataclass(frozen=True)
class Failure:
    """One failure: which GPU, when (hours after start), how, and what came before."""

    host: int
    gpu: int
    at_h: float
    xid: int
    precursor: bool
    lead_h: float  # hours from the first precursor event to the failure (0: none)
    refault: bool  # drawn as the refault of the node's previous repair
    repair_h: float


@dataclass(frozen=True)
class Event:
    """A telemetry event: ('sbe' | 'row_remap' | 'xid', host, gpu, hours after start, code)."""

    kind: str
    host: int
    gpu: int
    at_h: float
    code: int = 0


@dataclass(frozen=True)
class Fleet:
    config: FleetConfig
    failures: tuple[Failure, ...]
    events: tuple[Event, ...]
    bursts: int


def draw_fleet(config: FleetConfig) -> Fleet:
    """The fleet's failures and telemetry events, a function of `config` alone."""
    rng = np.random.default_rng(config.seed)
    horizon_h = config.days * 24
    # refaults multiply the base rate by 1 / (1 - refault_7d) (a branching process)
    base_per_host_h = GPUS_PER_HOST / config.gpu_hours_per_failure * (1 - config.refault_7d)
    failures: list[Failure] = []
    for host in range(config.hosts):
        at = rng.exponential(1 / base_per_host_h)
        refault = False
        while at < horizon_h:
            failure = _failure(config, rng, host, at, refault)
            failures.append(failure)
            repaired = at + failure.repair_h
            if rng.random() < config.refault_7d:
                at, refault = repaired + rng.uniform(0.05, 7 * 24), True
            else:
                at, refault = repaired + rng.exponential(1 / base_per_host_h), False
    events = [e for f in failures for e in _precursors(f, rng)]
    events += [Event("xid", f.host, f.gpu, f.at_h, f.xid) for f in failures]
    bursts = int(rng.poisson(config.sbe_bursts_per_1k_gpu_days * config.gpus * config.days / 1000))
    for _ in range(bursts):
        host, gpu = int(rng.integers(config.hosts)), int(rng.integers(GPUS_PER_HOST))
        t0, length = rng.uniform(0, horizon_h), rng.uniform(1, 4)
        for t in np.sort(rng.uniform(t0, t0 + length, int(rng.integers(5, 26)))):
            events.append(Event("sbe", host, gpu, float(t)))
    events = [e for e in events if 0 <= e.at_h < horizon_h]
    events.sort(key=lambda e: (e.at_h, e.host, e.gpu))
    return Fleet(config, tuple(sorted(failures, key=lambda f: f.at_h)), tuple(events), bursts)


def _failure(
    config: FleetConfig, rng: np.random.Generator, host: int, at: float, refault: bool
) -> Failure:
    warned = bool(rng.random() < config.precursor_share)
    if warned:
        xid = int(rng.choice(WARNED_XIDS))
        lead = float(np.clip(rng.lognormal(np.log(config.lead_h_median), 0.8), 1.0, 48.0))
    else:
        xid, lead = int(rng.choice(SUDDEN_XIDS, p=SUDDEN_P)), 0.0
    repair = float(rng.lognormal(np.log(config.repair_h_median), 1.0))
    gpu = int(rng.integers(GPUS_PER_HOST))
    # whole seconds: the failure's XID sample, its ticket and its truth name the same instant
    return Failure(host, gpu, round(at * 3600) / 3600, xid, warned, lead, refault, repair)


def _precursors(failure: Failure, rng: np.random.Generator) -> list[Event]:
    """Corrected ECC errors accelerating over the lead time, rows remapped, an XID 63."""
    if not failure.precursor:
        return []
    t0, t1 = failure.at_h - failure.lead_h, failure.at_h
    # density rising towards the failure: u^(1/3) puts most increments late
    times = t0 + (t1 - t0) * (1 - rng.random(int(rng.integers(20, 61))) ** 3)
    events = [Event("sbe", failure.host, failure.gpu, float(t)) for t in times]
    for t in t0 + (t1 - t0) * rng.uniform(0.2, 0.95, int(rng.integers(2, 6))):
        events.append(Event("row_remap", failure.host, failure.gpu, float(t)))
    events.append(
        Event("xid", failure.host, failure.gpu, t0 + (t1 - t0) * rng.uniform(0.3, 0.9), 63)
    )
    return [e for e in events if e.at_h < t1]


def host_name(host: int) -> str:
    """A host's name where no inventory names it: node00001, ..."""
    return f"node{host + 1:05d}"


def write_fleet(fleet: Fleet, out: Path, hosts: Sequence[str] = ()) -> dict[str, Path]:
    """The fleet in the real formats and its truth under `out` (see the module docstring);
    `hosts` names the hosts (the simulated inventory's), else `host_name`."""
    start = fleet.config.start

    def names(host: int) -> str:
        return hosts[host] if host < len(hosts) else host_name(host)

    paths = {
        "tickets": out / "faults" / "tickets.csv",
        "events": out / "dcgm" / "fleet_events.prom",
        "truth": out / "truth" / "failures.csv",
        "config": out / "truth" / "failures.json",
    }
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)

    def iso(hours: float) -> str:
        return (start + timedelta(hours=hours)).isoformat()

    with paths["tickets"].open("w", newline="") as handle:
        tickets = csv.writer(handle)
        tickets.writerow(["node", "start", "end", "kind", "description"])
        for f in fleet.failures:
            tickets.writerow([names(f.host), iso(f.at_h), iso(f.at_h + f.repair_h), "GPU",
                              f"GPU {f.gpu} XID {f.xid}"])  # fmt: skip
    with paths["truth"].open("w", newline="") as handle:
        truth = csv.writer(handle)
        truth.writerow(["node", "gpu", "at", "xid", "precursor", "lead_h", "refault", "repair_h"])
        for f in fleet.failures:
            truth.writerow([names(f.host), f.gpu, iso(f.at_h), f.xid, f.precursor,
                            round(f.lead_h, 4), f.refault, round(f.repair_h, 4)])  # fmt: skip
    _write_prom(fleet, paths["events"], names)
    counts = {
        "failures": len(fleet.failures),
        "with_precursor": sum(f.precursor for f in fleet.failures),
        "refaults": sum(f.refault for f in fleet.failures),
        "sbe_bursts": fleet.bursts,
        "gpu_days": fleet.config.gpus * fleet.config.days,
    }
    config = {k: v.isoformat() if isinstance(v, datetime) else v
              for k, v in asdict(fleet.config).items()}  # fmt: skip
    paths["config"].write_text(json.dumps({"config": config, "counts": counts}, indent=2) + "\n")
    return paths


_METRIC = {
    "sbe": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "row_remap": "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "xid": "DCGM_FI_DEV_XID_ERRORS",
}


def _write_prom(fleet: Fleet, path: Path, names: Callable[[int], str]) -> None:
    """Each event as two samples of its field: one a second before (the count so far, or XID
    0) and one at it (the count + 1, or the XID's code)."""
    start_ms = int(fleet.config.start.astimezone(UTC).timestamp() * 1000)
    counts: dict[tuple[str, int, int], int] = {}
    lines: dict[str, list[str]] = {name: [] for name in _METRIC.values()}
    for e in fleet.events:
        metric = _METRIC[e.kind]
        labels = (
            f'{{gpu="{e.gpu}",UUID="GPU-{e.host:05d}-{e.gpu}",Hostname="{names(e.host)}",'
            'modelName="NVIDIA H100 80GB HBM3"}'
        )
        at_ms = start_ms + round(e.at_h * 3_600_000)
        if e.kind == "xid":
            before, after = 0, e.code
        else:
            before = counts.get((e.kind, e.host, e.gpu), 0)
            after = counts[(e.kind, e.host, e.gpu)] = before + 1
        lines[metric].append(f"{metric}{labels} {before} {at_ms - 1000}")
        lines[metric].append(f"{metric}{labels} {after} {at_ms}")
    with path.open("w") as handle:
        for metric, samples in lines.items():
            kind = "gauge" if metric.endswith("XID_ERRORS") else "counter"
            handle.write(f"# HELP {metric} {metric}\n# TYPE {metric} {kind}\n")
            handle.write("\n".join(samples) + ("\n" if samples else ""))
