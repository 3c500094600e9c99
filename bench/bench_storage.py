"""Telemetry on disk: bytes per sample, ingest and rollup refresh, beside Parquet and Prometheus.

For each size (GPUs × scrape interval × hours) the simulator's samples go, in one run, into:

- **wanka**: a fresh warehouse (series dictionary + samples, sql/schema/0012), through
  `Engine.insert_arrow` as ingest writes them, one batch id per simulator batch;
- **v11 table**: the layout before 0012 — gpu_metrics a plain table with its strings on every row —
  in a warehouse of today's schema whose gpu_metrics view is replaced by that table (the same
  rollups run on both); for the largest sizes only the first `--v11-hours` are loaded, because
  that layout costs ~29 B a sample at 10,000 GPUs (its bytes per sample barely depend on the span:
  its cost is the per-row-group string dictionaries);
- **Parquet (zstd)**: the same long-format columns, written by pyarrow, zstd level 3;
- **Prometheus TSDB**: the same samples as an OpenMetrics file, loaded by Debian's
  `promtool tsdb create-blocks-from openmetrics` (blocks up to `--prom-block` long), for sizes up
  to `--prom-gpus` GPUs (the text is ~150 bytes a sample); skipped with a note when promtool is
  missing (`apt-get install prometheus`).

Bytes are what the store holds after CHECKPOINT: DuckDB's used blocks less those of an empty
warehouse (the schema), the Parquet file, the TSDB block folders (chunks + index). Then the
shipped dynamic tables are refreshed FULL on wanka and on the v11 table (median of 3), and the
ratios of ingest rate and refresh time are printed beside the targets (≤ 2 B/sample; ingest and
refresh no worse than v11).

    .venv/bin/python bench/bench_storage.py   # 1k·60s·24h, 10k·60s·24h, 10k·15s·24h, 100k·60s·6h
    .venv/bin/python bench/bench_storage.py --sizes 1000:60:2   # quick
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage_others import store_parquet, store_prometheus  # bench/ is the script's folder
from storage_samples import Size, Stored, batches, cluster_for, parse_sizes

from warehouse.dynamic.shipped import install_shipped, shipped_folder
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.simulate.cluster import SimulatedCluster
from warehouse.tsdb.append import append

V11_TABLE = """CREATE TABLE gpu_metrics (
    ts TIMESTAMPTZ NOT NULL, host VARCHAR NOT NULL, gpu INTEGER, uuid VARCHAR, model VARCHAR,
    metric VARCHAR NOT NULL, value DOUBLE, labels JSON,
    batch_id BIGINT DEFAULT nextval('wanka.batch_seq'))"""
DEFAULT_SIZES = "1000:60:24,10000:60:24,10000:15:24,100000:60:6"


def used_bytes(con: duckdb.DuckDBPyConnection) -> int:
    con.execute("CHECKPOINT")
    return int(
        con.sql("SELECT used_blocks * block_size FROM pragma_database_size()").fetchall()[0][0]
    )


def empty_bytes(folder: Path) -> int:
    path = folder / "empty.duckdb"
    with Engine(str(path)) as eng:
        install_shipped(eng)
        return used_bytes(eng.con)


def load_inventory(eng: Engine, cluster: SimulatedCluster) -> None:
    cur = eng.cursor()
    for table in ("sites", "clusters", "nodes", "jobs"):
        eng.insert_arrow(cur, table, getattr(cluster, table))
    cur.close()


def refresh_all(eng: Engine, repeats: int) -> dict[str, float]:
    cur = eng.cursor()
    times: dict[str, float] = {}
    for path in sorted(shipped_folder().glob("*.sql")):
        runs = []
        for _ in range(repeats):
            started = time.perf_counter()
            execute(cur, f"REFRESH DYNAMIC TABLE {path.stem} FULL").read_all()
            runs.append(time.perf_counter() - started)
        times[path.stem] = statistics.median(runs)
    cur.close()
    return times


Insert = Callable[[duckdb.DuckDBPyConnection, pa.Table], int]


def load_samples(
    eng: Engine, cluster: SimulatedCluster, hours: float | None, insert: Insert
) -> Stored:
    """The samples (the first `hours` if given), a batch id and a transaction per simulator
    batch, as ingest writes them; their count and the seconds it took."""
    out = Stored()
    started = time.perf_counter()
    for table in batches(cluster, hours):
        with eng.transaction() as tx:
            batch = tx.sql("SELECT nextval('wanka.batch_seq')").fetchall()[0][0]
            rows = table.append_column("batch_id", pa.array([batch] * table.num_rows, pa.int64()))
            out.samples += insert(tx, rows)
    out.seconds = time.perf_counter() - started
    return out


def store_wanka(folder: Path, cluster: SimulatedCluster, base: int, repeats: int) -> Stored:
    with Engine(str(folder / "wanka.duckdb")) as eng:
        load_inventory(eng, cluster)
        install_shipped(eng)
        out = load_samples(eng, cluster, None, lambda tx, rows: append(tx, rows).gpu)
        out.bytes = used_bytes(eng.con) - base
        out.refresh_s = refresh_all(eng, repeats)
    return out


def store_v11(
    folder: Path, cluster: SimulatedCluster, base: int, hours: float | None, repeats: int
) -> Stored:
    def insert(tx: duckdb.DuckDBPyConnection, rows: pa.Table) -> int:
        tx.register("_rows", rows)
        try:
            found = tx.execute("INSERT INTO gpu_metrics BY NAME SELECT * FROM _rows")
            return int(found.fetchall()[0][0])
        finally:
            tx.unregister("_rows")

    with Engine(str(folder / "v11.duckdb")) as eng:
        eng.con.execute("DROP VIEW gpu_metrics")
        eng.con.execute(V11_TABLE)
        load_inventory(eng, cluster)
        install_shipped(eng)
        out = load_samples(eng, cluster, hours, insert)
        out.note = f"first {hours:g} h" if hours is not None else ""
        out.bytes = used_bytes(eng.con) - base  # the v11 layout, in today's schema
        out.refresh_s = refresh_all(eng, repeats)
    return out


def fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="GPUS:INTERVAL_S:HOURS,...")
    parser.add_argument(
        "--v11-hours", type=float, default=6.0, help="v11 table: hours loaded past 1,000 GPUs"
    )
    parser.add_argument(
        "--v11-max-samples", type=float, default=300e6, help="skip v11 above this many samples"
    )
    parser.add_argument(
        "--prom-gpus", type=int, default=1000, help="Prometheus up to this many GPUs"
    )
    parser.add_argument("--prom-block", default="24h", help="promtool --max-block-duration")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    args = parser.parse_args()

    rows: list[tuple[Size, dict[str, Stored]]] = []
    for size in parse_sizes(args.sizes):
        folder = Path(tempfile.mkdtemp(prefix="wanka-storage-", dir=args.dir))
        try:
            print(f"# {size.label}", file=sys.stderr, flush=True)
            cluster = cluster_for(size)
            base = empty_bytes(folder)
            found: dict[str, Stored] = {}
            found["wanka"] = store_wanka(folder, cluster, base, args.repeats)
            (folder / "wanka.duckdb").unlink()
            print(f"  wanka {found['wanka'].per_sample:.2f} B/sample", file=sys.stderr, flush=True)
            v11_hours = None if size.gpus <= 1000 else min(size.hours, args.v11_hours)
            if (
                found["wanka"].samples * (v11_hours or size.hours) / size.hours
                <= args.v11_max_samples
            ):
                found["v11"] = store_v11(folder, cluster, base, v11_hours, args.repeats)
                (folder / "v11.duckdb").unlink()
            found["parquet"] = store_parquet(folder, cluster)
            if size.gpus <= args.prom_gpus:
                found["prometheus"] = store_prometheus(folder, cluster, args.prom_block)
            rows.append((size, found))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    report(rows)


def report(rows: list[tuple[Size, dict[str, Stored]]]) -> None:
    print(
        "| size | samples | wanka B/sample | v11 table | Parquet zstd | Prometheus TSDB | target |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for size, found in rows:
        cells = []
        for key in ("v11", "parquet", "prometheus"):
            s = found.get(key)
            if s is None:
                cells.append("—")
            else:
                note = f" ({s.note})" if s.note else ""
                cells.append(f"{fmt(s.per_sample, '.2f')}{note}")
        w = found["wanka"]
        ok = "met" if w.per_sample is not None and w.per_sample <= 2 else "not met"
        print(
            f"| {size.label} | {w.samples:,} | {fmt(w.per_sample, '.2f')} | "
            f"{' | '.join(cells)} | ≤ 2 B: {ok} |"
        )
    print()
    print(
        "| size | ingest wanka (M samples/s) | v11 table | ratio "
        "| full refresh, 4 shipped tables: wanka s | v11 s | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for size, found in rows:
        w, v = found["wanka"], found.get("v11")
        w_ref = sum(w.refresh_s.values())
        if v is None:
            rate = fmt((w.rate or 0) / 1e6, ".2f")
            print(f"| {size.label} | {rate} | — | — | {w_ref:.2f} | — | — |")
            continue
        v_ref = sum(v.refresh_s.values())
        rate_ratio = (w.rate or 0) / (v.rate or 1)
        # v11 may hold fewer hours: compare refresh per sample held
        per = (w_ref / w.samples) / (v_ref / v.samples) if v.samples else None
        print(
            f"| {size.label} | {(w.rate or 0) / 1e6:.2f} | {(v.rate or 0) / 1e6:.2f}"
            f"{' (' + v.note + ')' if v.note else ''} | {rate_ratio:.2f}× | {w_ref:.2f} | "
            f"{v_ref:.2f} | "
            f"{fmt(per, '.2f')}× per sample |"
        )
    print()
    print(
        "Refresh FULL per shipped table (s, median): "
        + "; ".join(
            f"{size.label}: "
            + ", ".join(
                f"{name} {found['wanka'].refresh_s[name]:.2f}"
                + (f" / v11 {found['v11'].refresh_s[name]:.2f}" if "v11" in found else "")
                for name in found["wanka"].refresh_s
            )
            for size, found in rows
        )
    )


if __name__ == "__main__":
    main()
