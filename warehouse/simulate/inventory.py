"""The hardware: sites → clusters → racks → hosts, with GPU specs read from the reference CSV.

The fleet is the kind a 10,000-card operator actually runs: several generations bought in
waves, in three sites with different power prices and grids, one Kubernetes cluster for
inference beside the Slurm training clusters, and the mess that accumulates (a batch of
ConnectX-7 hosts whose NIC slots are PCIe Gen4, racks left on single 25 GbE storage links,
a few hosts drained or down).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from warehouse.kernel import catalog
from warehouse.simulate.config import GPUS_PER_HOST, SimConfig
from warehouse.simulate.tables import to_table

HOSTS_PER_RACK = 4


@dataclass(frozen=True)
class GpuSpec:
    """What the simulator needs of one `gpu_models` row."""

    model: str
    vendor: str
    full_name: str
    tdp_w: float
    idle_w: float
    hbm_gb: float
    scaleup_gbs: float


@dataclass(frozen=True)
class ClusterPlan:
    """One cluster as built: what was bought, where, and how it is wired."""

    name: str
    site: str
    scheduler: str
    fabric: str
    model: str
    share: float  # of the fleet's GPUs
    prefix: str  # host names are prefix + 4-digit number
    nic_model: str
    nic_gbps: float
    nic_count: int
    pcie_gen: int
    storage_nic_gbps: float
    storage_nic_count: int
    bond_mode: str
    storage_gbs: float  # the parallel file system's write bandwidth, GB/s
    cpu_cores: int
    memory_gb: float
    installed: datetime
    gen4_share: float = 0.0  # leading racks whose NIC slots are PCIe Gen4
    typed_gres: bool = True  # AllocTRES says gres/gpu:<type>=N rather than gres/gpu=N

    @property
    def partition(self) -> str:
        """The Slurm partition (one per GPU model): 'h100', '910b', ..."""
        return self.model.split()[-1].lower()


# site, region, PUE, USD/kWh, gCO2e/kWh (grid average), WAN GB/s, latitude, longitude
SITES: tuple[tuple[str, str, float, float, float, float, float, float], ...] = (
    ("ashburn", "us-east", 1.35, 0.085, 370.0, 50.0, 39.0438, -77.4874),
    ("hillsboro", "us-west", 1.20, 0.068, 290.0, 50.0, 45.5229, -122.9898),
    ("ulanqab", "cn-north", 1.15, 0.045, 640.0, 25.0, 40.9941, 113.1327),
)


def _d(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


CLUSTERS: tuple[ClusterPlan, ...] = (
    ClusterPlan("ash-h100", "ashburn", "slurm", "infiniband", "H100", 0.28, "h100a",
                "ConnectX-7", 400, 8, 5, 200, 2, "802.3ad", 400, 112, 2048, _d(2023, 9, 18),
                gen4_share=0.15),
    ClusterPlan("ash-h200", "ashburn", "slurm", "infiniband", "H200", 0.14, "h200a",
                "ConnectX-7", 400, 8, 5, 200, 2, "balance-rr", 400, 112, 2048, _d(2024, 11, 4)),
    ClusterPlan("ash-k8s", "ashburn", "kubernetes", "roce", "H100", 0.08, "h100k",
                "ConnectX-7", 400, 4, 5, 100, 2, "802.3ad", 150, 112, 2048, _d(2024, 3, 11)),
    ClusterPlan("pdx-b200", "hillsboro", "slurm", "infiniband", "B200", 0.10, "b200p",
                "ConnectX-7", 400, 8, 5, 200, 2, "802.3ad", 600, 112, 4096, _d(2025, 6, 2),
                typed_gres=False),
    ClusterPlan("pdx-a100", "hillsboro", "slurm", "roce", "A100", 0.12, "a100p",
                "ConnectX-6", 200, 4, 4, 100, 1, "none", 150, 128, 1024, _d(2021, 10, 4),
                typed_gres=False),
    ClusterPlan("pdx-mi300x", "hillsboro", "slurm", "roce", "MI300X", 0.06, "mi300p",
                "ConnectX-7", 400, 8, 5, 100, 2, "802.3ad", 200, 192, 2048, _d(2024, 9, 16),
                typed_gres=False),
    ClusterPlan("ulq-h800", "ulanqab", "slurm", "roce", "H800", 0.10, "h800u",
                "ConnectX-7", 400, 8, 5, 100, 2, "balance-rr", 300, 112, 2048, _d(2023, 7, 3)),
    ClusterPlan("ulq-910b", "ulanqab", "slurm", "roce", "Ascend 910B", 0.12, "npu",
                "ConnectX-6", 200, 8, 4, 25, 2, "802.3ad", 120, 192, 1536, _d(2024, 4, 8),
                typed_gres=False),
)  # fmt: skip


@dataclass(frozen=True)
class Inventory:
    """The hosts as numpy arrays (index = host number) plus the cluster plans they follow."""

    plans: tuple[ClusterPlan, ...]
    specs: dict[str, GpuSpec]
    host_names: list[str]
    host_cluster: np.ndarray  # index into plans
    host_rack: list[str]
    host_state: np.ndarray  # 'up' | 'drain' | 'down'
    pcie_gen: np.ndarray
    storage_nic_gbps: np.ndarray
    storage_nic_count: np.ndarray
    bond_mode: np.ndarray
    installed_s: np.ndarray  # seconds since the Unix epoch

    def spec(self, host: int) -> GpuSpec:
        return self.specs[self.plans[int(self.host_cluster[host])].model]


def load_gpu_specs(path: Path | None = None) -> dict[str, GpuSpec]:
    """GPU specs by short model name from `gpu_models.csv`; idle_w defaults to 10 % of TDP.

    Raises:
        FileNotFoundError: when the CSV is missing.
        ValueError: when a column the simulator needs is missing.
    """
    path = path or catalog.sql_dir() / "reference" / "gpu_models.csv"
    if not path.is_file():
        raise FileNotFoundError(f"GPU specs {path} are missing; the simulator reads TDP from it")
    table = pacsv.read_csv(path)
    missing = {"model", "tdp_w", "hbm_gb"} - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: columns {sorted(missing)} are missing")

    def column(name: str, default: object) -> list[object]:
        if name not in table.column_names:
            return [default] * table.num_rows
        values = table[name]
        if default is not None and not isinstance(default, str):
            values = pc.cast(values, pa.float64())
        return [default if v is None else v for v in values.to_pylist()]

    models = column("model", None)
    tdp = column("tdp_w", 0.0)
    idle = column("idle_w", None)
    rows = zip(
        models, column("vendor", "NVIDIA"), column("full_name", ""), tdp, idle,
        column("hbm_gb", 0.0), column("scaleup_gbs", 0.0), strict=True,
    )  # fmt: skip
    specs = {}
    for model, vendor, full, tdp_w, idle_w, hbm, scaleup in rows:
        idle_value = float(idle_w) if isinstance(idle_w, int | float) else 0.1 * float(tdp_w)
        specs[str(model)] = GpuSpec(
            str(model), str(vendor), str(full or model), float(tdp_w), idle_value,
            float(hbm), float(scaleup),
        )  # fmt: skip
    return specs


def hosts_per_cluster(total_hosts: int, plans: tuple[ClusterPlan, ...]) -> list[int]:
    """Split hosts by share with the largest-remainder method (sums to `total_hosts`).

    >>> hosts_per_cluster(1250, CLUSTERS)
    [350, 175, 100, 125, 150, 75, 125, 150]
    """
    exact = [p.share * total_hosts for p in plans]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(plans)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_remainder[: total_hosts - sum(counts)]:
        counts[i] += 1
    return counts


def build_inventory(cfg: SimConfig, rng: np.random.Generator) -> Inventory:
    """Lay out the fleet for `cfg`: clusters that get no host are left out."""
    specs = load_gpu_specs(cfg.gpu_models_csv)
    unknown = sorted({p.model for p in CLUSTERS} - set(specs))
    if unknown:
        raise ValueError(f"GPU models {unknown} are not in the GPU specs CSV")
    counts = hosts_per_cluster(cfg.hosts, CLUSTERS)
    plans = tuple(p for p, n in zip(CLUSTERS, counts, strict=True) if n)
    names: list[str] = []
    racks: list[str] = []
    cluster_of: list[int] = []
    gen: list[int] = []
    storage_gbps: list[float] = []
    storage_count: list[int] = []
    bonds: list[str] = []
    installed: list[float] = []
    for index, plan in enumerate(plans):
        n = counts[CLUSTERS.index(plan)]
        n_racks = -(-n // HOSTS_PER_RACK)
        # Racks that kept the old storage uplink: a single 25 GbE port, no bond.
        legacy = rng.random(n_racks) < 0.08
        wave_days = np.sort(rng.integers(0, 90, n_racks))
        for i in range(n):
            rack = i // HOSTS_PER_RACK
            names.append(f"{plan.prefix}{i + 1:04d}")
            racks.append(f"{plan.name}-r{rack + 1:03d}")
            cluster_of.append(index)
            gen.append(4 if rack < round(plan.gen4_share * n_racks) else plan.pcie_gen)
            storage_gbps.append(25.0 if legacy[rack] else plan.storage_nic_gbps)
            storage_count.append(1 if legacy[rack] else plan.storage_nic_count)
            bonds.append("none" if legacy[rack] else plan.bond_mode)
            when = plan.installed + timedelta(days=int(wave_days[rack]), hours=int(i % 9))
            installed.append(when.timestamp())
    draw = rng.random(len(names))
    state = np.where(draw < 0.005, "down", np.where(draw < 0.02, "drain", "up"))
    # Every cluster keeps its first host up, so even an 8-GPU simulation has somewhere to run.
    firsts = np.flatnonzero(np.diff(np.array(cluster_of), prepend=-1) != 0)
    state[firsts] = "up"
    return Inventory(
        plans=plans,
        specs=specs,
        host_names=names,
        host_cluster=np.array(cluster_of, dtype=np.int32),
        host_rack=racks,
        host_state=state.astype(object),
        pcie_gen=np.array(gen, dtype=np.int32),
        storage_nic_gbps=np.array(storage_gbps),
        storage_nic_count=np.array(storage_count, dtype=np.int32),
        bond_mode=np.array(bonds, dtype=object),
        installed_s=np.array(installed),
    )


def sites_table(inv: Inventory) -> pa.Table:
    rows = list(zip(*SITES, strict=True))
    names = ("site", "region", "pue", "price_per_kwh", "grid_g_per_kwh", "wan_gbs",
             "latitude", "longitude")  # fmt: skip
    return to_table("sites", dict(zip(names, rows, strict=True)))


def clusters_table(inv: Inventory) -> pa.Table:
    hosts = np.bincount(inv.host_cluster, minlength=len(inv.plans))
    return to_table("clusters", {
        "cluster": [p.name for p in inv.plans],
        "site": [p.site for p in inv.plans],
        "scheduler": [p.scheduler for p in inv.plans],
        "fabric": [p.fabric for p in inv.plans],
        "gpu_model": [p.model for p in inv.plans],
        "hosts": hosts,
        "gpus": hosts * GPUS_PER_HOST,
    })  # fmt: skip


def nodes_table(inv: Inventory, state: np.ndarray | None = None) -> pa.Table:
    """One row per host; `state` overrides the inventory's (hosts drained by the simulation)."""
    plan_of = [inv.plans[c] for c in inv.host_cluster]
    n = len(inv.host_names)
    return to_table("nodes", {
        "host": inv.host_names,
        "cluster": [p.name for p in plan_of],
        "site": [p.site for p in plan_of],
        "rack": inv.host_rack,
        "gpu_model": [p.model for p in plan_of],
        "gpus": np.full(n, GPUS_PER_HOST),
        "cpu_cores": [p.cpu_cores for p in plan_of],
        "memory_gb": [p.memory_gb for p in plan_of],
        "nic_model": [p.nic_model for p in plan_of],
        "nic_count": [p.nic_count for p in plan_of],
        "pcie_gen": inv.pcie_gen,
        "pcie_lanes": np.full(n, 16),
        "storage_nic_gbps": inv.storage_nic_gbps,
        "storage_nic_count": inv.storage_nic_count,
        "bond_mode": list(inv.bond_mode),
        "state": list(inv.host_state if state is None else state),
        "installed_at": pa.array(np.round(inv.installed_s * 1e6).astype(np.int64)).cast(
            pa.timestamp("us", tz="UTC")
        ),
    })  # fmt: skip
