"""A simulated cluster written out in the formats real clusters produce.

    out/
      inventory/{sites,clusters,nodes}.csv   header = the DDL's column names
      dcgm/metrics-NNNN.prom                 dcgm-exporter text, one file per telemetry batch
      slurm/sacct.txt                        sacct --parsable2 with a header
      slurm/scontrol.txt                     scontrol show job -d --oneliner, the window's jobs
      parquet/<table>.parquet                the eager tables
      parquet/gpu_metrics/part-NNNN.parquet  the telemetry, one part per batch
      truth/job_gpus.csv, job_usage.csv      what really ran where, and its telemetry (truth.py)
      truth/idle_gpus.csv                    the GPUs jobs held and left idle (idle.py)
      manifest.json                          config, label keys, row counts, files

Telemetry is generated once and each batch goes to its .prom file, its Parquet part and the
truth's sums, so memory stays at one batch whatever the window.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from warehouse.simulate.idle import idle_summary
from warehouse.simulate.prom import PromWriter
from warehouse.simulate.sacct import write_sacct
from warehouse.simulate.scontrol import write_scontrol
from warehouse.simulate.scrape_labels import SCRAPE_KEYS
from warehouse.simulate.truth import JobUsage, truth_job_ids, write_truth

if TYPE_CHECKING:
    from warehouse.simulate.cluster import SimulatedCluster

INVENTORY_TABLES = ("sites", "clusters", "nodes")
KINDS = ("inventory", "dcgm", "slurm", "parquet", "truth")
#: The label keys telemetry carries in each `SimConfig.job_labels` mode, for manifest.json.
LABEL_KEYS = {
    "hpc": {"slurm": ["hpc_job"], "kubernetes": ["container", "namespace", "pod"]},
    "kubernetes": {"slurm": [], "kubernetes": ["container", "namespace", "pod"]},
    "none": {"slurm": [], "kubernetes": []},
}


def write_formats(
    cluster: SimulatedCluster,
    out_dir: Path,
    progress: Callable[[int], None] | None = None,
    *,
    max_rows: int = 2_000_000,
    kinds: Collection[str] = KINDS,
) -> dict[str, list[Path]]:
    """Write `cluster` under `out_dir` (created if missing); returns the files by kind.

    Args:
        cluster: what `simulate_cluster` returned.
        out_dir: the folder to write into; existing files of the same names are replaced.
        progress: called with the number of telemetry samples written so far, after each batch.
        max_rows: telemetry rows per batch, i.e. per .prom file and Parquet part.
        kinds: which of the folders to write (the demo skips the bulky DCGM text).

    Returns:
        {'inventory': [...], 'dcgm': [...], 'slurm': [sacct.txt], 'scontrol': [scontrol.txt],
        'parquet': [...], 'truth': [...], 'manifest': [...]}, paths under `out_dir`, for the
        kinds asked for (scontrol.txt comes with the `slurm` kind).
    """
    out_dir = Path(out_dir)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown kinds {sorted(unknown)}; choose from {KINDS}")
    folders = {k: out_dir / k for k in KINDS if k in kinds}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    if "parquet" in folders:
        (folders["parquet"] / "gpu_metrics").mkdir(exist_ok=True)
    files: dict[str, list[Path]] = {k: [] for k in (*folders, "manifest")}
    tables = cluster.tables()

    if "inventory" in folders:
        for name in INVENTORY_TABLES:
            path = folders["inventory"] / f"{name}.csv"
            pacsv.write_csv(csv_ready(tables[name]), path)
            files["inventory"].append(path)

    slurm_jobs = scontrol_jobs = None
    if "slurm" in folders:
        sacct_path = folders["slurm"] / "sacct.txt"
        slurm_jobs = write_sacct(
            cluster.jobs, cluster.job_steps, cluster.nodes, cluster.clusters, sacct_path
        )
        scontrol_path = folders["slurm"] / "scontrol.txt"
        scontrol_jobs = write_scontrol(cluster, scontrol_path)
        files["slurm"].append(sacct_path)
        files["scontrol"] = [scontrol_path]  # a format of its own: `slurm` lists sacct text

    if "parquet" in folders:
        for name, table in tables.items():
            path = folders["parquet"] / f"{name}.parquet"
            pq.write_table(table, path)
            files["parquet"].append(path)

    usage = JobUsage(cluster.telemetry) if "truth" in folders else None
    done = _write_telemetry(cluster, folders, files, max_rows, progress, usage)
    if usage is not None:
        job_ids = truth_job_ids(cluster.jobs, cluster.clusters)
        files["truth"] = write_truth(cluster.telemetry, usage, job_ids, folders["truth"])
    manifest = out_dir / "manifest.json"
    counts = {name: table.num_rows for name, table in tables.items()}
    counts["gpu_metrics"] = done
    mode = cluster.config.job_labels
    manifest.write_text(
        json.dumps(
            {
                "generator": "wanka simulate",
                "config": cluster.config.to_json(),
                "sample_count": cluster.sample_count,
                "rows": counts,
                "sacct_jobs": slurm_jobs,
                "scontrol_jobs": scontrol_jobs,
                "job_labels": {"mode": mode, "keys": LABEL_KEYS[mode]},
                "exporter_labels": sorted(SCRAPE_KEYS) if cluster.config.exporter_labels else [],
                "idle_gpus": idle_summary(cluster.telemetry, cluster.config),
                "files": {
                    kind: [str(p.relative_to(out_dir)) for p in paths]
                    for kind, paths in files.items()
                },
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    files["manifest"].append(manifest)
    return files


def _write_telemetry(
    cluster: SimulatedCluster,
    folders: dict[str, Path],
    files: dict[str, list[Path]],
    max_rows: int,
    progress: Callable[[int], None] | None,
    usage: JobUsage | None,
) -> int:
    """The telemetry as DCGM text and/or Parquet parts, batch by batch; the samples written.

    `usage` (the truth's sums) sees every batch, even when neither text nor Parquet is wanted.
    """
    prom = PromWriter(cluster.telemetry) if "dcgm" in folders else None
    done = 0
    written = bool({"dcgm", "parquet"} & set(folders))
    observe = usage.observe if usage is not None else None
    telemetry = cluster.telemetry_batches(max_rows, observe) if written or observe else ()
    for index, batch in enumerate(telemetry):
        if prom is not None:
            prom_path = folders["dcgm"] / f"metrics-{index:04d}.prom"
            with prom_path.open("wb") as handle:
                prom.write(batch, handle)
            files["dcgm"].append(prom_path)
        if "parquet" in folders:
            part = folders["parquet"] / "gpu_metrics" / f"part-{index:04d}.parquet"
            # No min/max of the label texts: nothing prunes on them, and they cost more than
            # the rest of the part to compute.
            stats = [n for n in batch.schema.names if n != "labels"]
            pq.write_table(pa.Table.from_batches([batch]), part, write_statistics=stats)
            files["parquet"].append(part)
        done += batch.num_rows if written else 0
        if progress is not None and written:
            progress(done)
    return done


def csv_ready(table: pa.Table) -> pa.Table:
    """Timestamps as ISO 8601 with a Z, which every CSV reader (DuckDB included) parses."""
    columns = []
    for field, column in zip(table.schema, table.columns, strict=True):
        if pa.types.is_timestamp(field.type):
            seconds = column.cast(pa.timestamp("s", tz="UTC"), safe=False)
            column = pc.strftime(seconds, format="%Y-%m-%dT%H:%M:%SZ")
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)
