"""A synthetic GPU cluster: inventory, job log and DCGM telemetry, reproducible from a seed.

    from warehouse.simulate import SimConfig, simulate_cluster, write_formats
    cluster = simulate_cluster(SimConfig(gpus=10_000, hours=1.0))
    cluster.jobs                          # pa.Table shaped like the `jobs` table
    for batch in cluster.telemetry_batches():   # gpu_metrics rows, bounded memory
        ...
    write_formats(cluster, Path("out"))   # the real file formats, for `wanka ingest`

The pipeline is inventory → workload → scheduler → job log → telemetry plan → faults → GPUs
jobs leave idle → step times (job_events 'step_time', which a slow GPU lengthens); every step
draws from its own generator derived from `cfg.seed`, so a change in one step's draws leaves
the others' alone. Inventory and job log are built eagerly (seconds at 10,000 GPUs); telemetry
is generated batch by batch when iterated. `faults` injects faults with their ground truth and
`nccl` the nccl-tests probes that see them, so the health rules can be scored; `idle` draws the
GPUs jobs hold and leave idle, for the waste analyses; `truth` keeps what really
happened beside the files (`formats`: inventory CSV, dcgm-exporter text, sacct, scontrol,
Parquet), so the warehouse's reading of them can be checked.
"""

from __future__ import annotations

from warehouse.simulate.cluster import SimulatedCluster, simulate_cluster
from warehouse.simulate.config import InvalidConfig, SimConfig
from warehouse.simulate.formats import write_formats

__all__ = ["InvalidConfig", "SimConfig", "SimulatedCluster", "simulate_cluster", "write_formats"]
