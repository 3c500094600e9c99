"""A simulated cluster written out in the formats real clusters produce.

    out/
      inventory/{sites,clusters,nodes}.csv   header = the DDL's column names
      dcgm/metrics-NNNN.prom                 dcgm-exporter text, one file per telemetry batch
      slurm/sacct.txt                        sacct --parsable2 with a header
      parquet/<table>.parquet                the eager tables
      parquet/gpu_metrics/part-NNNN.parquet  the telemetry, one part per batch
      manifest.json                          config, row counts, files

Telemetry is generated once and each batch goes to both its .prom file and its Parquet part,
so memory stays at one batch whatever the window.
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

from warehouse.simulate.prom import PromWriter
from warehouse.simulate.sacct import write_sacct

if TYPE_CHECKING:
    from warehouse.simulate.cluster import SimulatedCluster

INVENTORY_TABLES = ("sites", "clusters", "nodes")
KINDS = ("inventory", "dcgm", "slurm", "parquet")


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
        {'inventory': [...], 'dcgm': [...], 'slurm': [...], 'parquet': [...],
        'manifest': [...]}, paths under `out_dir`.
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

    slurm_jobs = None
    if "slurm" in folders:
        sacct_path = folders["slurm"] / "sacct.txt"
        slurm_jobs = write_sacct(
            cluster.jobs, cluster.job_steps, cluster.nodes, cluster.clusters, sacct_path
        )
        files["slurm"].append(sacct_path)

    if "parquet" in folders:
        for name, table in tables.items():
            path = folders["parquet"] / f"{name}.parquet"
            pq.write_table(table, path)
            files["parquet"].append(path)

    done = _write_telemetry(cluster, folders, files, max_rows, progress)
    manifest = out_dir / "manifest.json"
    counts = {name: table.num_rows for name, table in tables.items()}
    counts["gpu_metrics"] = done
    manifest.write_text(
        json.dumps(
            {
                "generator": "wanka simulate",
                "config": cluster.config.to_json(),
                "sample_count": cluster.sample_count,
                "rows": counts,
                "sacct_jobs": slurm_jobs,
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
) -> int:
    """The telemetry as DCGM text and/or Parquet parts, batch by batch; the samples written."""
    prom = PromWriter(cluster.telemetry)
    done = 0
    telemetry = cluster.telemetry_batches(max_rows) if {"dcgm", "parquet"} & set(folders) else ()
    for index, batch in enumerate(telemetry):
        if "dcgm" in folders:
            prom_path = folders["dcgm"] / f"metrics-{index:04d}.prom"
            with prom_path.open("wb") as handle:
                prom.write(batch, handle)
            files["dcgm"].append(prom_path)
        if "parquet" in folders:
            part = folders["parquet"] / "gpu_metrics" / f"part-{index:04d}.parquet"
            pq.write_table(pa.Table.from_batches([batch]), part)
            files["parquet"].append(part)
        done += batch.num_rows
        if progress is not None:
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
