"""DCGM ingest on one core, end to end, beside DuckDB's own read_csv of the same samples.

Run: `.venv/bin/python bench/bench_ingest_dcgm.py [--gpus N] [--scrapes N] [--quick]`.

The simulator's dcgm-exporter writer produces N GPUs × scrapes × 16 fields of Prometheus text
(one file); the same samples are written pre-flattened to CSV (ts,host,gpu,uuid,model,metric,
value). Then, on one thread (thread pools pinned before numpy, polars and pyarrow load; DuckDB
`SET threads=1`), each into a fresh database file, median of three:

- `wanka ingest dcgm`: hash + parse + validate + insert + COMMIT, labels included;
- DuckDB `INSERT INTO flat SELECT * FROM read_csv(...)` of the flattened CSV into a plain table
  with gpu_metrics' columns, no labels;
- and, to show where the time goes, the reader alone and DuckDB's insert of what it yields (the
  rest of end to end is hashing the file for the exactly-once check).

Last, peak RSS of a child process ingesting the file once and the file repeated, to show
memory does not grow with the input.
"""

from __future__ import annotations

import os

for _var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402

pa.set_cpu_count(1)
pa.set_io_thread_count(1)

from warehouse.ingest import ReadOptions, ingest  # noqa: E402
from warehouse.ingest.base import Source  # noqa: E402
from warehouse.ingest.batch import read_context  # noqa: E402
from warehouse.ingest.dcgm import read  # noqa: E402
from warehouse.kernel.engine import Engine  # noqa: E402
from warehouse.simulate import SimConfig, simulate_cluster  # noqa: E402
from warehouse.simulate.formats import csv_ready  # noqa: E402
from warehouse.simulate.prom import PromWriter  # noqa: E402
from warehouse.tsdb.append import append  # noqa: E402

TARGET_PER_S = 1_000_000
MAX_RATIO = 3.0
REPEATS = 3
CSV_COLUMNS = ["ts", "host", "gpu", "uuid", "model", "metric", "value"]


def write_inputs(gpus: int, scrapes: int, folder: Path) -> tuple[Path, Path, int]:
    """One .prom file and one flattened CSV of the same simulated samples."""
    cfg = SimConfig(gpus=gpus, hours=scrapes * 15 / 3600, interval_s=15.0, warmup_hours=2.0)
    cluster = simulate_cluster(cfg)
    prom, csv = folder / "metrics.prom", folder / "metrics.csv"
    writer = PromWriter(cluster.telemetry)
    rows = 0
    with prom.open("wb") as text, pacsv.CSVWriter(csv, _csv_schema()) as flat:
        for batch in cluster.telemetry_batches():
            writer.write(batch, text)
            table = pa.Table.from_batches([batch]).select(CSV_COLUMNS)
            flat.write_table(_flatten(table))
            rows += batch.num_rows
    return prom, csv, rows


def _csv_schema() -> pa.Schema:
    types = [pa.string(), pa.string(), pa.int32(), pa.string(), pa.string(), pa.string()]
    return pa.schema([*zip(CSV_COLUMNS, types, strict=False), ("value", pa.float64())])


def _flatten(table: pa.Table) -> pa.Table:
    """Plain strings for the dictionary columns, ISO 8601 times (scrapes fall on the second)."""
    columns = [
        c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns
    ]
    return csv_ready(pa.Table.from_arrays(columns, names=table.column_names))


def fresh_engine(path: Path) -> Engine:
    path.unlink(missing_ok=True)
    engine = Engine(str(path))
    engine.con.execute("SET threads = 1")
    return engine


def time_ours(prom: Path, db: Path) -> tuple[float, int]:
    engine = fresh_engine(db)
    try:
        began = time.perf_counter()
        [result] = ingest(engine, "dcgm", [str(prom)])
        return time.perf_counter() - began, result.total_rows
    finally:
        engine.close()


def parsed_chunks(prom: Path, db: Path) -> tuple[float, list[pa.Table]]:
    """The dcgm reader alone (no hashing, no database): seconds, and the tables it yields."""
    engine = fresh_engine(db)
    try:
        context = read_context(engine)
        began = time.perf_counter()
        with prom.open("rb") as stream:
            source = Source(str(prom), prom, datetime.now(UTC))
            tables = [chunk.rows for chunk in read(stream, source, ReadOptions(), context)]
        return time.perf_counter() - began, tables
    finally:
        engine.close()


def time_store(tables: list[pa.Table], db: Path) -> tuple[float, int]:
    """DuckDB alone: INSERT the reader's tables (with a batch_id, as batch.py does) + COMMIT."""
    engine = fresh_engine(db)
    try:
        began = time.perf_counter()
        with engine.transaction() as cur:
            rows = 0
            for table in tables:
                batch = pa.array(np.full(table.num_rows, 1, np.int64))
                rows += append(cur, table.append_column("batch_id", batch)).gpu
        return time.perf_counter() - began, rows
    finally:
        engine.close()


def time_read_csv(csv: Path, db: Path) -> tuple[float, int]:
    engine = fresh_engine(db)
    try:
        began = time.perf_counter()
        with engine.transaction() as cur:
            # a plain table with gpu_metrics' columns: what DuckDB alone would load into
            cur.execute("CREATE TABLE flat AS FROM gpu_metrics LIMIT 0")
            cur.execute(
                "INSERT INTO flat BY NAME SELECT * FROM read_csv(?, header = true)", [str(csv)]
            )
            rows = cur.sql("SELECT count(*) FROM flat").fetchall()[0][0]
        return time.perf_counter() - began, int(rows)
    finally:
        engine.close()


def median_of(run: Callable[[], tuple[float, int]]) -> tuple[float, int]:
    results = [run() for _ in range(REPEATS)]
    return statistics.median(r[0] for r in results), results[0][1]


_CHILD = """
import sys
from pathlib import Path
from warehouse.kernel.engine import Engine
from warehouse.ingest import ingest
from warehouse.ingest.base import ReadOptions, Source
from warehouse.ingest.batch import read_context
from warehouse.ingest.dcgm import read

def peak_kb():  # this process's own high-water mark (ru_maxrss would count the parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1])

path, db, mode = sys.argv[1:]
engine = Engine(db)
engine.con.execute("SET threads = 1")
if mode == "parse":
    with open(path, "rb") as stream:
        for chunk in read(stream, Source(path, Path(path)), ReadOptions(), read_context(engine)):
            pass
else:
    ingest(engine, "dcgm", [path])
print(peak_kb())
"""


def peak_rss_mb(prom: Path, copies: int, folder: Path) -> tuple[float, float, float]:
    """(input MB, peak RSS MB parsing only, peak RSS MB ingesting) for `copies` × the file."""
    source = prom
    if copies > 1:
        source = folder / f"metrics-x{copies}.prom"
        with source.open("wb") as out:
            for _ in range(copies):
                with prom.open("rb") as part:
                    while chunk := part.read(1 << 24):
                        out.write(chunk)
    peaks = []
    for mode in ("parse", "ingest"):
        db = folder / f"rss-{copies}.duckdb"
        db.unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(source), str(db), mode],
            capture_output=True, text=True, check=True, env=dict(os.environ),
        )  # fmt: skip
        peaks.append(int(done.stdout.split()[-1]) / 1024)
        db.unlink(missing_ok=True)
    size_mb = source.stat().st_size / 2**20
    if copies > 1:
        source.unlink()
    return size_mb, peaks[0], peaks[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2000)
    parser.add_argument("--scrapes", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="256 GPUs × 10 scrapes, no RSS")
    args = parser.parse_args()
    gpus, scrapes = (256, 10) if args.quick else (args.gpus, args.scrapes)
    with tempfile.TemporaryDirectory(prefix="wanka-bench-dcgm-") as tmp:
        folder = Path(tmp)
        began = time.perf_counter()
        prom, csv, samples = write_inputs(gpus, scrapes, folder)
        print(
            f"{samples:,} samples ({gpus} GPUs × {scrapes} scrapes × 16 fields), "
            f"{prom.stat().st_size / 2**20:.0f} MB of text, written in "
            f"{time.perf_counter() - began:.1f} s; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
        )
        db = folder / "bench.duckdb"
        ours, rows = median_of(lambda: time_ours(prom, db))
        base, base_rows = median_of(lambda: time_read_csv(csv, db))
        assert rows == samples == base_rows, (rows, samples, base_rows)
        parse = statistics.median(parsed_chunks(prom, db)[0] for _ in range(REPEATS))
        tables = parsed_chunks(prom, db)[1]
        store, stored = median_of(lambda: time_store(tables, db))
        assert stored == samples
        tables.clear()
        ratio = ours / base
        rate = samples / ours
        passed = {True: "PASS", False: "FAIL"}
        print("| load (one core, fresh db file) | samples | s, median of 3 | samples/s | ratio |")
        print("|---|---:|---:|---:|---:|")
        for label, seconds in (
            ("wanka ingest dcgm, end to end (labels included)", ours),
            ("… of which the dcgm reader alone (parse + validate)", parse),
            ("… of which DuckDB INSERT + COMMIT of its rows", store),
            ("DuckDB read_csv, flattened CSV (no labels)", base),
        ):
            print(
                f"| {label} | {samples:,} | {seconds:.2f} | {samples / seconds:,.0f} | "
                f"{seconds / base:.2f}× |"
            )
        print()
        print(f"- ≥ {TARGET_PER_S:,} samples/s: {passed[rate >= TARGET_PER_S]} ({rate:,.0f})")
        print(f"- within {MAX_RATIO:g}× of read_csv: {passed[ratio <= MAX_RATIO]} ({ratio:.2f}×)")
        if not args.quick:
            print("\n| input | MB | peak RSS MB, parse only | peak RSS MB, ingest |")
            print("|---|---:|---:|---:|")
            for copies in (1, 2):
                size, parse, whole = peak_rss_mb(prom, copies, folder)
                print(f"| file × {copies} | {size:,.0f} | {parse:,.0f} | {whole:,.0f} |")
            print(
                "\nParse only: the reader's own memory (one 8 MB block and its arrays). Ingest "
                "adds DuckDB's buffer pool, which caches written blocks up to its memory_limit."
            )


if __name__ == "__main__":
    main()
