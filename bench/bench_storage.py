"""Telemetry on disk: bytes per sample in wanka (compacted), Prometheus, VictoriaMetrics, Parquet.

For each size (GPUs × scrape interval × hours) the simulator's samples go, in one run, into:

- **wanka**: a fresh warehouse with the simulator's inventory, the samples written through
  `warehouse.tsdb.append` as ingest writes them (one batch id and transaction per simulator
  batch); then `compact(cur, now=<a day after the data>)` moves every closed 2 h window into
  pcodec blocks (wanka.gpu_blocks). Bytes are DuckDB's used blocks after CHECKPOINT less those
  of the same warehouse before any sample (schema + inventory), before compaction (hot) and
  after (as stored). Ingest and compaction are timed apart; compaction's CPU seconds (this
  process, every thread: getrusage) are given as core-minutes per day of data at that size.
  The ingest path is the one before compaction existed, so its rate is that rate.
- **where wanka's bytes go**: per metric, the payload of its blocks (sum of octet_length(data))
  over its samples; then, since `pragma_storage_info` names segments but not their bytes, the
  warehouse is taken apart after the measurement and each part is what its used bytes fall by
  (CHECKPOINT after each step, 256 KiB blocks, so ± a block): the blocks' `data` column (ALTER
  TABLE ... DROP COLUMN), the statistics rows (DROP TABLE wanka.gpu_blocks; also given
  uncompressed, from its column widths, as they are below a block), the series dictionary
  (DROP TABLE wanka.gpu_series); what is left above the empty warehouse is the rest: what
  ingest derives beside the samples (batch log, job label stretches, GPU events and their
  state, a 256 KiB block or more each) and DuckDB's partly used blocks.
- **sorted Parquet**: wanka's hot samples (series_id, ts, value) ordered by metric, series, ts,
  ids and timestamps DELTA_BINARY_PACKED, values PLAIN, zstd, plus the series dictionary as a
  second file; written by pyarrow before compaction.
- **VictoriaMetrics**: Debian's `victoria-metrics` (installed with apt-get when missing, skipped
  with a note when it cannot be) on a free loopback port with its own data folder,
  `-retentionPeriod=100y -search.disableCache`; every sample as Prometheus text with ms
  timestamps through `/api/v1/import/prometheus`, then `/internal/force_flush` and
  `/internal/force_merge`, waiting until no merge runs and the folder stops changing; bytes of
  `data/` and `indexdb/` apart. Its ingest time is that of the POSTs and the flush.
- **Prometheus TSDB**: the same samples as an OpenMetrics file, loaded by Debian's
  `promtool tsdb create-blocks-from openmetrics` (blocks up to `--prom-block` long), chunks and
  index apart, for sizes up to `--prom-gpus` GPUs: the text is ~300 bytes a sample (all
  labels), 69 GB at 10,000 GPUs · 60 s · 24 h. Skipped with a note when promtool is missing.

Prometheus and VictoriaMetrics get every series label wanka keeps (gpu_series' columns and its
labels JSON); neither stores batch ids, which wanka's blocks do.

The goal line: wanka ≤ 1.0 B/sample and below both Prometheus and VictoriaMetrics.

The "v11 table" comparison (gpu_metrics as a plain table with its strings on every row, ~28 B a
sample at 10,000 GPUs) and the FULL refresh of the shipped dynamic tables are gone: with
compaction and two more servers the run no longer fitted its time.

    .venv/bin/python bench/bench_storage.py   # 1k·60s·24h, 10k·60s·24h, 10k·15s·24h
    .venv/bin/python bench/bench_storage.py --sizes 100:60:4   # quick
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage_others import store_parquet, store_prometheus, store_victoria  # bench/ on sys.path
from storage_samples import START, Size, Stored, batches, cluster_for, parse_sizes

from warehouse.dynamic.shipped import install_shipped
from warehouse.kernel.engine import Engine
from warehouse.simulate.cluster import SimulatedCluster
from warehouse.tsdb.append import append
from warehouse.tsdb.compact import compact
from warehouse.tsdb.relations import BLOCKS, SERIES

DEFAULT_SIZES = "1000:60:24,10000:60:24,10000:15:24"
#: The bytes of a statistics row's fixed-width columns (0021_telemetry_blocks.sql): 15 of 8 bytes
#: less the two INTEGER series bounds' 4 each, without the metric name.
STATS_WIDTH = 15 * 8 - 2 * 4
GOAL = 1.0  # B/sample


def used_bytes(con: duckdb.DuckDBPyConnection, database: str | None = None) -> int:
    """A database's used blocks × block size after CHECKPOINT (default: the current one)."""
    name = database or con.sql("SELECT current_database()").fetchall()[0][0]
    con.execute(f"CHECKPOINT {name}")
    return int(
        con.execute(
            "SELECT used_blocks * block_size FROM pragma_database_size() WHERE database_name = ?",
            [name],
        ).fetchall()[0][0]
    )


def load_inventory(eng: Engine, cluster: SimulatedCluster) -> None:
    cur = eng.cursor()
    for table in ("sites", "clusters", "nodes", "jobs"):
        eng.insert_arrow(cur, table, getattr(cluster, table))
    cur.close()


def load_samples(eng: Engine, cluster: SimulatedCluster) -> Stored:
    """The samples, a batch id and a transaction per simulator batch, as ingest writes them;
    their count and the seconds it took."""
    out = Stored()
    started = time.perf_counter()
    for table in batches(cluster):
        with eng.transaction() as tx:
            batch = tx.sql("SELECT nextval('wanka.batch_seq')").fetchall()[0][0]
            rows = table.append_column("batch_id", pa.array([batch] * table.num_rows, pa.int64()))
            out.samples += append(tx, rows).gpu
    out.seconds = time.perf_counter() - started
    return out


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def where_bytes_go(con: duckdb.DuckDBPyConnection, base: int, out: Stored) -> None:
    """The second table's rows: each metric's block payload, then what the warehouse's used
    bytes fall by as the parts go, one after another — the blocks' data column, the rest of the
    blocks table (statistics rows), the series dictionary; what is left above the empty
    warehouse is the rest. It takes the warehouse apart: the last thing done with it."""
    per_metric = con.sql(
        f"SELECT metric, sum(octet_length(data))::BIGINT, sum(samples)::BIGINT FROM {BLOCKS} "
        "GROUP BY metric ORDER BY 2 DESC"
    ).fetchall()
    [(n_series, n_blocks, stats_raw)] = con.sql(
        f"SELECT (SELECT count(*) FROM {SERIES}), count(*), "
        f"(count(*) * {STATS_WIDTH} + sum(strlen(metric)))::BIGINT FROM {BLOCKS}"
    ).fetchall()
    total = used_bytes(con)
    con.execute(f"ALTER TABLE {BLOCKS} DROP COLUMN data")
    without_data = used_bytes(con)
    con.execute(f"DROP TABLE {BLOCKS}")
    without_blocks = used_bytes(con)
    con.execute(f"DROP TABLE {SERIES} CASCADE")  # and the triggers that name it
    rest = used_bytes(con)
    payload = sum(b for _, b, _ in per_metric)
    n = out.samples
    out.where = [(f"block payload: {m}", b, s) for m, b, s in per_metric]
    out.where += [
        ("block payload, all metrics (sum of octet_length(data))", payload, n),
        ("blocks' data column as stored", total - without_data, n),
        (
            f"block statistics rows ({n_blocks:,} blocks), measured",
            without_data - without_blocks,
            n,
        ),
        ("block statistics rows, uncompressed (fixed-width columns + metric)", stats_raw or 0, n),
        (f"series dictionary ({n_series:,} series)", without_blocks - rest, n),
        ("rest (batch log, job label stretches, GPU events and state)", rest - base, n),
        ("total", total - base, n),
    ]


def store_wanka(folder: Path, cluster: SimulatedCluster, size: Size) -> tuple[Stored, Stored]:
    """wanka's figures, and sorted Parquet's (written from its hot samples)."""
    with Engine(str(folder / "wanka.duckdb")) as eng:
        load_inventory(eng, cluster)
        install_shipped(eng)
        base = used_bytes(eng.con)
        out = load_samples(eng, cluster)
        out.hot_bytes = used_bytes(eng.con) - base
        print(f"  wanka hot {out.hot_bytes / out.samples:.2f} B/sample, ingest {out.seconds:.0f} s",
              file=sys.stderr, flush=True)  # fmt: skip
        cur = eng.cursor()
        try:
            parquet = store_parquet(folder, cur)
            print(f"  parquet {parquet.per_sample:.2f} B/sample", file=sys.stderr, flush=True)
            started, cpu = time.perf_counter(), cpu_seconds()
            moved = compact(cur, now=START + timedelta(hours=size.hours + 24))
            out.compact_s = time.perf_counter() - started
            out.compact_cpu_s = cpu_seconds() - cpu
        finally:
            cur.close()
        if sum(m.samples for m in moved) != out.samples:
            out.note = f"compacted {sum(m.samples for m in moved):,} of {out.samples:,}"
        out.bytes = used_bytes(eng.con) - base
        where_bytes_go(eng.con, base, out)
    return out, parquet


def fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="GPUS:INTERVAL_S:HOURS,...")
    parser.add_argument(
        "--prom-gpus", type=int, default=1000, help="Prometheus up to this many GPUs"
    )
    parser.add_argument("--prom-block", default="24h", help="promtool --max-block-duration")
    parser.add_argument("--no-victoria", action="store_true", help="skip VictoriaMetrics")
    parser.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    args = parser.parse_args()

    rows: list[tuple[Size, dict[str, Stored]]] = []
    for size in parse_sizes(args.sizes):
        folder = Path(tempfile.mkdtemp(prefix="wanka-storage-", dir=args.dir))
        try:
            print(f"# {size.label}", file=sys.stderr, flush=True)
            cluster = cluster_for(size)
            found: dict[str, Stored] = {}
            found["wanka"], found["parquet"] = store_wanka(folder, cluster, size)
            (folder / "wanka.duckdb").unlink()
            w = found["wanka"]
            print(f"  wanka {w.per_sample:.2f} B/sample, compaction {w.compact_s:.0f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
            if not args.no_victoria:
                found["victoria"] = store_victoria(folder, cluster)
                v = found["victoria"]
                print(f"  victoria {fmt(v.per_sample, '.2f')} B/sample {v.note}",
                      file=sys.stderr, flush=True)  # fmt: skip
            if size.gpus <= args.prom_gpus:
                found["prometheus"] = store_prometheus(folder, cluster, args.prom_block)
            else:
                found["prometheus"] = Stored(
                    note=f"not run above --prom-gpus {args.prom_gpus} (its OpenMetrics file is "
                    f"~300 B a sample: {found['wanka'].samples * 300 / 1e9:.0f} GB)"
                )
            rows.append((size, found))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        report(rows[-1:], file=sys.stderr)
    report(rows)


def mrate(samples: int, seconds: float) -> str:
    """Millions of samples a second."""
    return f"{samples / seconds / 1e6:.2f}" if seconds else "—"


def _per(n: int | None, samples: int) -> str:
    return "—" if n is None or not samples else f"{n / samples:.2f}"


def _parts(s: Stored | None) -> str:
    if s is None:
        return "—"
    if s.per_sample is None:
        return f"— ({s.note})" if s.note else "—"
    inner = " + ".join(f"{_per(b, s.samples)} {name}" for name, b in s.parts.items() if b)
    return f"{s.per_sample:.2f}" + (f" ({inner})" if inner else "")


def report(rows: list[tuple[Size, dict[str, Stored]]], file: object = None) -> None:
    def say(line: str = "") -> None:
        print(line, file=file)  # type: ignore[call-overload]

    say(
        "| size | samples | wanka B/sample (hot before compaction) | VictoriaMetrics "
        "| Prometheus TSDB | sorted Parquet | goal: wanka ≤ 1.0 B and below both |"
    )
    say("|---|---:|---:|---:|---:|---:|---|")
    for size, found in rows:
        w = found["wanka"]
        vm, prom = found.get("victoria"), found.get("prometheus")
        others = [s.per_sample for s in (vm, prom) if s is not None and s.per_sample]
        if w.per_sample is None:
            verdict = "—"
        else:
            ratio = f"{w.per_sample / GOAL:.2f}× of 1.0 B"
            pairs = (("VM", vm and vm.per_sample), ("Prom", prom and prom.per_sample))
            below = [f"{w.per_sample / o:.2f}× of {name}" for name, o in pairs if o]
            met = w.per_sample <= GOAL and all(w.per_sample < o for o in others)
            verdict = f"{'met' if met else 'not met'}: {'; '.join([ratio, *below])}"
            if len(others) < 2:
                verdict += " (not all compared)"
        say(
            f"| {size.label} | {w.samples:,} | {fmt(w.per_sample, '.2f')} "
            f"({_per(w.hot_bytes, w.samples)}) | {_parts(vm)} | {_parts(prom)} "
            f"| {_parts(found.get('parquet'))} | {verdict} |"
        )
    say()
    say(
        "| size | wanka ingest s (M samples/s) | compaction s (M samples/s) | compaction CPU s "
        "| core-min per day of data | ingest + compaction M samples/s "
        "| VictoriaMetrics import s (M samples/s) | promtool s |"
    )
    say("|---|---:|---:|---:|---:|---:|---:|---:|")
    for size, found in rows:
        w = found["wanka"]
        vm, prom = found.get("victoria"), found.get("prometheus")
        days = size.hours / 24
        say(
            f"| {size.label} | {w.seconds:.1f} ({mrate(w.samples, w.seconds)}) "
            f"| {w.compact_s:.1f} ({mrate(w.samples, w.compact_s)}) | {w.compact_cpu_s:.1f} "
            f"| {w.compact_cpu_s / 60 / days:.2f} "
            f"| {mrate(w.samples, w.seconds + w.compact_s)} "
            f"| {f'{vm.seconds:.1f} ({mrate(vm.samples, vm.seconds)})' if vm and vm.bytes else '—'}"
            " "
            f"| {f'{prom.seconds:.1f}' if prom and prom.bytes else '—'} |"
        )
    for size, found in rows:
        w = found["wanka"]
        say()
        say(f"Where wanka's bytes go, {size.label} ({w.samples:,} samples):")
        say()
        say("| part | bytes | samples | B/sample |")
        say("|---|---:|---:|---:|")
        for name, n, samples in w.where:
            say(f"| {name} | {n:,} | {samples:,} | {_per(n, samples)} |")
    notes = [
        f"{size.label} {key}: {s.note}"
        for size, found in rows
        for key, s in found.items()
        if s.note
    ]
    if notes:
        say()
        say("Notes: " + "; ".join(notes))


if __name__ == "__main__":
    main()
