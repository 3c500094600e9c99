"""The demo clusters the tests build, in one place: each is built once per run, by whichever
xdist worker asks first, and copied for every test module that uses it
(`warehouses.demo(...)`, tests/warehouses.py).

Eight modules used to build their own demo, each a little different, and each xdist worker built
the shared ones again. Three clusters now serve them all: each differs from the others where some
test's data needs it to (named below), and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from warehouse.demo import DEMO_START
from warehouse.simulate import SimConfig


@dataclass(frozen=True)
class DemoCluster:
    """A demo warehouse a test may ask for: a simulated cluster, maybe with the real samples."""

    name: str  # names the built file
    config: SimConfig
    real_data: bool = False  # also ingest ../shared/data's public samples (Philly, Alibaba...)


#: 64 GPUs (8 hosts: one on each cluster, the Kubernetes one included), 90 minutes of one-minute
#: scrapes after 6 hours of history: every base, reference and shipped dynamic table has rows,
#: Slurm jobs and pods both run in the window, and gpu_metrics is big enough that a full refresh
#: of a table over it outlasts a kill (test_server_faults). ~2 s to build.
TINY = DemoCluster(
    "tiny",
    SimConfig(gpus=64, hours=1.5, interval_s=60.0, start=DEMO_START, seed=5, warmup_hours=6.0),
)

#: 256 GPUs (32 hosts, 4 on each cluster, so nccl-tests probes pair them), an hour of two-minute
#: scrapes after a day of history, plus the real public samples (Philly, Alibaba, nvidia-smi,
#: sacct): checkpoints, XIDs and every job state, a fault of each kind for the health rules, and
#: the real traces, which the analyses and the report are checked on. ~5 s to build.
SMALL = DemoCluster(
    "small",
    SimConfig(
        gpus=256,
        hours=1.0,
        interval_s=120.0,
        start=DEMO_START,
        seed=3,
        warmup_hours=24.0,
        faults=1,
        nccl_probe_s=900.0,
    ),
    real_data=True,
)

#: SMALL's fleet and faults with another seed and 6 hours of history, and no real samples: its
#: bad NIC shows in the nccl-tests panels of the Grafana dashboards (SMALL's does not), and the
#: health page has current findings. ~3 s to build.
FAULTY = DemoCluster("faulty", replace(SMALL.config, seed=5, warmup_hours=6.0))
