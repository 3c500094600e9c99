"""What a simulation is asked for: size, window, resolution, seed and failure rate.

Everything the simulator produces is a function of one `SimConfig`; the same config gives the
same tables and telemetry, bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from warehouse.errors import UserError

GPUS_PER_HOST = 8

#: 2026-11-01T00:00:00Z, a Sunday: the demo's default window.
DEFAULT_START = datetime(2026, 11, 1, tzinfo=UTC)

#: How telemetry names the job on a GPU (`SimConfig.job_labels`):
#:   'hpc'        dcgm-exporter with --hpc-job-mapping-dir on the Slurm clusters: `hpc_job`, the
#:                job id as sacct's JobID shows it; pod labels on the Kubernetes clusters
#:   'kubernetes' pod/namespace/container labels on the Kubernetes clusters only
#:   'none'       no job labels: only hosts and GPUs, the rest has to come from the schedulers
JOB_LABELS = ("hpc", "kubernetes", "none")


class InvalidConfig(UserError, ValueError):
    """A simulation parameter is out of its domain (a ValueError, exit status 2 at the CLI)."""


@dataclass(frozen=True)
class SimConfig:
    """The parameters of one simulated cluster.

    Attributes:
        gpus: GPUs wanted; rounded up to whole 8-GPU hosts (10,000 → 1,250 hosts).
        hours: length of the telemetry window starting at `start`.
        interval_s: seconds between two telemetry scrapes.
        start: start of the telemetry window; a naive datetime is taken as UTC.
        seed: the seed every random draw derives from.
        warmup_hours: the scheduler runs this long before `start`, so the window opens on a
            loaded cluster with a queue and a job history.
        target_load: offered GPU load (GPU-hours submitted per GPU-hour of capacity). Busy
            clusters keep a standing queue, so the default offers a little more than fits;
            fragmentation and reservations for big jobs leave 80–90 % of GPUs busy.
        fatal_xid_per_gpu_h: rate of fatal XID errors (79, 48, 74, 95) per GPU-hour. The default
            2e-5 is Meta's Llama 3 figure (419 unexpected interruptions, mostly GPU and HBM,
            in 54 days on 16,384 H100s); raise it to see failures in small simulations.
        faults: faults of each kind to inject, with their ground truth (faults.py: slow GPU,
            climbing ECC errors then an XID, thermal, silent host, bad NIC); 0 for none. Set
            `fatal_xid_per_gpu_h` to 0 as well for a clean background.
        nccl_probe_s: seconds between two nccl-tests probe sweeps (every host in a 2-node
            all_reduce_perf with each of two neighbours: nccl.py), written as nccl_results;
            0 for none.
        gpu_models_csv: GPU specs to use; default `sql/reference/gpu_models.csv`.
        job_labels: how samples name the job on their GPU, one of `JOB_LABELS`.
        exporter_labels: whether samples also carry the labels Prometheus gives a dcgm-exporter
            series (`instance`, `job`, `device`, `modelName`, `pci_bus_id`,
            `DCGM_FI_DRIVER_VERSION`), so the PromQL API and dashboards written for
            dcgm-exporter find them; off, `labels` holds the job labels alone (null on idle
            GPUs), the smaller column older simulations had.
        idle_job_share: share of the window's single-host jobs whose GPUs all sit idle (0 %)
            for as long as the job holds them: a notebook left open, a job stuck before its
            first kernel (idle.py says why these rates).
        idle_gpu_share: share of the window's other multi-GPU jobs that leave some of their
            GPUs idle (a script that uses 1 of the 8 GPUs it asked for, a launcher that starts
            fewer ranks than GPUs).
    """

    gpus: int = 10_000
    hours: float = 1.0
    interval_s: float = 60.0
    start: datetime = DEFAULT_START
    seed: int = 0
    warmup_hours: float = 48.0
    target_load: float = 1.05
    fatal_xid_per_gpu_h: float = 2e-5
    faults: int = 0
    nccl_probe_s: float = 0.0
    gpu_models_csv: Path | None = None
    job_labels: str = "hpc"
    exporter_labels: bool = True
    idle_job_share: float = 0.03
    idle_gpu_share: float = 0.05

    def __post_init__(self) -> None:
        _check_int("gpus", self.gpus, minimum=GPUS_PER_HOST, why="one host has 8 GPUs")
        _check_int("seed", self.seed, minimum=0, why="numpy seeds are non-negative")
        _check_int("faults", self.faults, minimum=0, why="a count of faults per kind")
        _check_positive("hours", self.hours)
        _check_positive("interval_s", self.interval_s)
        if round(self.interval_s * 1e6) < 1:
            raise InvalidConfig(f"interval_s must be at least 1 µs, got {self.interval_s}")
        _check_positive("warmup_hours", self.warmup_hours, allow_zero=True)
        _check_positive("target_load", self.target_load)
        _check_positive("fatal_xid_per_gpu_h", self.fatal_xid_per_gpu_h, allow_zero=True)
        _check_positive("nccl_probe_s", self.nccl_probe_s, allow_zero=True)
        for name in ("idle_job_share", "idle_gpu_share"):
            _check_positive(name, getattr(self, name), allow_zero=True)
            if getattr(self, name) > 1:
                raise InvalidConfig(f"{name} is a share: at most 1, got {getattr(self, name)}")
        if 0 < self.nccl_probe_s < 1:
            raise InvalidConfig(f"nccl_probe_s must be 0 or at least 1, got {self.nccl_probe_s}")
        if not isinstance(self.start, datetime):
            raise InvalidConfig(f"start must be a datetime, got {self.start!r}")
        if self.start.tzinfo is None:
            object.__setattr__(self, "start", self.start.replace(tzinfo=UTC))
        if self.job_labels not in JOB_LABELS:
            raise InvalidConfig(
                f"job_labels must be one of {', '.join(JOB_LABELS)}, got {self.job_labels!r}"
            )
        if not isinstance(self.exporter_labels, bool):
            given = self.exporter_labels
            raise InvalidConfig(f"exporter_labels must be true or false, got {given!r}")
        if self.gpu_models_csv is not None:
            object.__setattr__(self, "gpu_models_csv", Path(self.gpu_models_csv))

    @property
    def hosts(self) -> int:
        """Hosts in the inventory: ceil(gpus / 8)."""
        return -(-self.gpus // GPUS_PER_HOST)

    @property
    def interval_us(self) -> int:
        """The scrape interval in whole microseconds (the resolution of TIMESTAMPTZ)."""
        return round(self.interval_s * 1e6)

    @property
    def steps(self) -> int:
        """Scrapes in the window: timestamps start + k·interval for k < steps, at least one."""
        return max(1, math.ceil(self.hours * 3600e6 / self.interval_us - 1e-9))

    @property
    def start_us(self) -> int:
        """`start` in microseconds since the Unix epoch."""
        return round(self.start.timestamp() * 1e6)

    @property
    def window_s(self) -> int:
        """Length of the window in whole seconds; the scheduler stops here."""
        return math.ceil(self.hours * 3600)

    @property
    def warmup_s(self) -> int:
        return math.ceil(self.warmup_hours * 3600)

    def to_json(self) -> dict[str, Any]:
        """The config as JSON-ready values (for manifest.json)."""
        out = asdict(self)
        out["start"] = self.start.isoformat()
        out["gpu_models_csv"] = str(self.gpu_models_csv) if self.gpu_models_csv else None
        return out


def _check_int(name: str, value: object, *, minimum: int, why: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidConfig(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise InvalidConfig(f"{name} must be at least {minimum} ({why}), got {value}")


def _check_positive(name: str, value: object, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidConfig(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = "non-negative" if allow_zero else "positive"
        raise InvalidConfig(f"{name} must be a finite {bound} number, got {value}")
