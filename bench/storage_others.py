"""bench_storage's stores outside DuckDB: the same samples in Parquet (zstd) and in a Prometheus
TSDB built by `promtool tsdb create-blocks-from openmetrics`."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from storage_samples import Stored, batches  # bench/ is the script's folder on sys.path

from warehouse.simulate.cluster import SimulatedCluster


def store_parquet(folder: Path, cluster: SimulatedCluster) -> Stored:
    out = Stored()
    path = folder / "samples.parquet"
    writer: pq.ParquetWriter | None = None
    started = time.perf_counter()
    for table in batches(cluster):
        plain = table.cast(
            pa.schema(
                [
                    pa.field(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                    for f in table.schema
                ]
            )
        )
        if writer is None:
            writer = pq.ParquetWriter(path, plain.schema, compression="zstd", compression_level=3)
        writer.write_table(plain)
        out.samples += plain.num_rows
    if writer is not None:
        writer.close()
    out.seconds = time.perf_counter() - started
    out.bytes = path.stat().st_size
    path.unlink()
    return out


def write_openmetrics(cluster: SimulatedCluster, path: Path) -> int:
    """Every sample as OpenMetrics text, one metric family after another (as the format asks)."""
    families: dict[str, Path] = {}
    handles = {}
    count = 0
    for table in batches(cluster):
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        frame = frame.with_columns(
            pl.col("host", "uuid", "model", "metric", "labels").cast(pl.String)
        )
        pods = frame["labels"].str.json_path_match("$.pod")
        lines = frame.with_columns(
            (
                pl.col("metric")
                + pl.lit('{gpu="')
                + pl.col("gpu").cast(pl.String)
                + pl.lit('",UUID="')
                + pl.col("uuid")
                + pl.lit('",modelName="')
                + pl.col("model")
                + pl.lit('",Hostname="')
                + pl.col("host")
                + pl.when(pods.is_not_null()).then(pl.lit('",pod="') + pods).otherwise(pl.lit(""))
                + pl.lit('"} ')
                + pl.col("value").cast(pl.String)
                + pl.lit(" ")
                + (pl.col("ts").dt.epoch("ms") / 1000).cast(pl.String)
            ).alias("line")
        )
        for (metric,), part in lines.group_by("metric", maintain_order=True):
            if metric not in handles:
                families[metric] = path.with_suffix(f".{len(families)}.part")
                handles[metric] = families[metric].open("w")
            handles[metric].write("\n".join(part["line"].to_list()) + "\n")
            count += part.height
    for handle in handles.values():
        handle.close()
    with path.open("w") as out:
        for metric, part in families.items():
            out.write(f"# TYPE {metric} gauge\n")
            with part.open() as src:
                shutil.copyfileobj(src, out)
            part.unlink()
        out.write("# EOF\n")
    return count


def store_prometheus(folder: Path, cluster: SimulatedCluster, block: str) -> Stored:
    promtool = shutil.which("promtool")
    if promtool is None:
        return Stored(note="promtool missing: apt-get install prometheus")
    text = folder / "samples.om"
    out = Stored()
    out.samples = write_openmetrics(cluster, text)
    tsdb = folder / "tsdb"
    started = time.perf_counter()
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", f"--max-block-duration={block}",
         str(text), str(tsdb)],
        capture_output=True, text=True,
    )  # fmt: skip
    out.seconds = time.perf_counter() - started
    text.unlink()
    if done.returncode != 0:
        out.note = f"promtool failed: {done.stderr.strip()[-200:]}"
        return out
    out.bytes = sum(p.stat().st_size for p in tsdb.rglob("*") if p.is_file())
    out.note = f"{len(list(tsdb.glob('01*')))} blocks"
    shutil.rmtree(tsdb)
    return out
