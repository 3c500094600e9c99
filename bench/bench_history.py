"""A month of telemetry on one machine: raw retention, the tiers, compaction, queries over it.

A warehouse takes `--days` of a simulated cluster's DCGM telemetry a day at a time, as a live
one would: each day's samples in batches of ≤ 2M rows, then at that day's end the scheduler's
pass in its order (`warehouse/tsdb/upkeep.py`, then `service/serve/scheduler.py`'s refresh):
the raw retention rule applied (`--keep-days` of raw samples; the tiers keep the rest), the new
samples folded into the 1-minute and 1-hour tiers, compaction of every window closed by then
(`compact.compact(now=<the day's end>)`: the hot samples and the tiers' rows of closed 2 h
windows into compressed blocks), and every shipped dynamic table refreshed (incrementally); each
step is timed on its own. Then it times the queries people ask of a month, over the last hour,
day, week and month, each on the data that covers that range: raw samples where retention still
holds them, else the 1-minute tier for a day and the 1-hour tier for a week or a month (Grafana
asks at ~1,000 points a panel, so a week is drawn from hours, not minutes). Every query runs
through `warehouse.query.executor.execute`, as every face does, so a time bound decodes only the
blocks it needs (`warehouse/tsdb/prune.py`); each runs 5 times and the table prints the median
and the rows it read from. It checks each tier equals the raw recompute over the first day raw
samples still cover, prints the bytes of each part after CHECKPOINT, and last a paper estimate of
a year's disk from those bytes.

    .venv/bin/python bench/bench_history.py [--gpus 1000] [--days 30] [--keep-days 7]

The size the product is for is 10,000 GPUs for 30 days at 60 s: 6.9 billion samples, and as
many rows again in the 1-minute tier. This VM (2 vCPUs, ~70 GB free) runs a scaled cluster by
default (`--gpus`), and the table says which; the rows a query reads grow with the GPUs in
proportion, and that row count is printed beside each time. The first line says the ingest and
upkeep rate and what the full size would take at it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.history_bytes import FIELDS, SCRAPE_S, estimate, parts
from warehouse.dynamic.refresh import refresh
from warehouse.dynamic.shipped import install_shipped, shipped_folder
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.tsdb import compact, retention, tiers
from warehouse.tsdb.append import append

START = datetime(2026, 10, 1, tzinfo=UTC)
RANGES = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7)}
UTIL, POWER, TEMP = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"


@dataclass(frozen=True)
class Query:
    """One question, asked of the source that covers a range."""

    title: str
    sql: Callable[[str, str], str]  # (source, step) -> SQL with $from, $to


def _mean(source: str) -> str:
    return "avg(value)" if source == "gpu_metrics" else "sum(value_sum) / sum(samples)"


def _max(source: str) -> str:
    return "max(value)" if source == "gpu_metrics" else "max(value_max)"


def _bucket(source: str) -> str:
    return {"gpu_metrics": "ts", "gpu_hourly_host": "hour"}.get(source, "bucket")


QUERIES = [
    Query(
        "fleet GPU utilisation over time (Grafana panel, ~1,000 points)",
        lambda s, step: (
            f"SELECT time_bucket(INTERVAL '{step}', {_bucket(s)}) AS t, {_mean(s)} AS util_pct "
            f"FROM {s} WHERE metric = '{UTIL}' AND {_bucket(s)} >= $from AND {_bucket(s)} < $to "
            "GROUP BY 1 ORDER BY 1"
        ),
    ),
    Query(
        "power per host over time (kW, top 20 hosts)",
        lambda s, step: (
            f"SELECT host, time_bucket(INTERVAL '{step}', {_bucket(s)}) AS t, "
            f"{_mean(s)} * count(DISTINCT gpu) / 1e3 AS kw FROM {s} WHERE metric = '{POWER}' "
            f"AND {_bucket(s)} >= $from AND {_bucket(s)} < $to GROUP BY ALL "
            "ORDER BY kw DESC LIMIT 20"
        ),
    ),
    Query(
        "hottest 10 GPUs (max temperature)",
        lambda s, step: (
            f"SELECT host, gpu, uuid, {_max(s)} AS max_c FROM {s} WHERE metric = '{TEMP}' "
            f"AND {_bucket(s)} >= $from AND {_bucket(s)} < $to GROUP BY ALL "
            "ORDER BY max_c DESC, uuid LIMIT 10"
        ),
    ),
    Query(
        "idle GPUs: mean utilisation < 5 %, ranked",
        lambda s, step: (
            f"SELECT uuid, host, {_mean(s)} AS util_pct FROM {s} WHERE metric = '{UTIL}' "
            f"AND {_bucket(s)} >= $from AND {_bucket(s)} < $to GROUP BY ALL "
            f"HAVING {_mean(s)} < 5 ORDER BY util_pct, uuid"
        ),
    ),
    Query(
        "GPU power by cluster (the shipped Grafana panel, gpu_hourly_host)",
        lambda s, step: (
            "SELECT time_bucket(INTERVAL '1 hour', h.hour) AS t, n.cluster, "
            "sum(h.power_w * n.gpus) / 1e3 AS kw FROM gpu_hourly_host AS h "
            "JOIN nodes AS n ON n.host = h.host WHERE h.hour >= $from AND h.hour < $to "
            "GROUP BY 1, 2 ORDER BY 1"
        ),
    ),
]


def source_for(span: timedelta, keep: timedelta) -> tuple[str, str]:
    """The table that covers the last `span` and the step of its points (~1,000 a panel)."""
    if span <= keep and span <= timedelta(hours=6):
        return "gpu_metrics", "1 minute" if span <= timedelta(hours=1) else "5 minutes"
    if span <= timedelta(days=1):
        return "gpu_metrics_1m", "5 minutes"
    return "gpu_metrics_1h", "1 hour"


@dataclass
class Built:
    """What the build did: samples ingested, seconds of each step, what compaction moved."""

    samples: int = 0
    seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(
            ("ingest", "retention", "tiers", "compaction", "refresh"), 0.0
        )
    )
    moved: dict[str, int] = field(default_factory=dict)  # rows moved into blocks, by table
    moved_bytes: dict[str, int] = field(default_factory=dict)
    end: datetime = START

    @property
    def upkeep_s(self) -> float:
        return sum(v for k, v in self.seconds.items() if k != "ingest")


def build(engine: Engine, args: argparse.Namespace) -> Built:
    """Ingest the days one at a time with the scheduler's pass after each."""
    cluster = simulate_cluster(
        SimConfig(
            gpus=args.gpus,
            hours=args.days * 24.0,
            interval_s=args.interval,
            start=START,
            seed=16,
            warmup_hours=0.0,
        )
    )
    for name, table in cluster.tables().items():
        engine.insert_arrow(engine.con, name, table)
    install_shipped(engine)
    cur = engine.cursor()
    retention.set_rule(cur, "gpu_metrics", f"{args.keep_days} days", "bench")
    built = Built()
    day_end = START + timedelta(days=1)
    names = sorted(p.stem for p in shipped_folder().glob("*.sql"))

    def step(name: str, work: Callable[[], object]) -> object:
        began = time.perf_counter()
        done = work()
        built.seconds[name] += time.perf_counter() - began
        return done

    def upkeep(now: datetime) -> None:
        """The scheduler's pass at `now`: warehouse.tsdb.upkeep.TASKS in order, then refresh."""
        step("retention", lambda: retention.apply(cur, now))
        step("tiers", lambda: tiers.fold(cur))
        moved = step("compaction", lambda: compact.compact(cur, now=now))
        assert isinstance(moved, list)
        for done in moved:
            table = done.tier or "gpu_samples"
            built.moved[table] = built.moved.get(table, 0) + done.samples
            built.moved_bytes[table] = built.moved_bytes.get(table, 0) + done.bytes
        step("refresh", lambda: [refresh(cur, name, data_timestamp=now) for name in names])

    for batch in cluster.telemetry_batches(max_rows=2_000_000):
        table = pa.Table.from_batches([batch])
        first = table["ts"][0].as_py()
        while first >= day_end:
            upkeep(day_end)
            print(
                f"  day to {day_end:%m-%d}: {built.samples:,} samples; "
                + ", ".join(f"{k} {v:.0f} s" for k, v in built.seconds.items()),
                file=sys.stderr,
                flush=True,
            )
            day_end += timedelta(days=1)
        began = time.perf_counter()
        with engine.transaction() as tx:
            built.samples += append(tx, table).gpu
        built.seconds["ingest"] += time.perf_counter() - began
    built.end = pc.max(table["ts"]).as_py() + timedelta(seconds=args.interval)
    upkeep(built.end)
    cur.execute("CHECKPOINT")
    cur.close()
    return built


def query(engine: Engine, sql: str, values: dict[str, object]) -> pa.Table:
    """`sql` run as every face runs it (`execute`: a time bound prunes the blocks)."""
    cur = engine.cursor()
    try:
        return execute(cur, sql, values).read_all()
    finally:
        cur.close()


def timed(engine: Engine, sql: str, values: dict[str, object]) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(5):
        began = time.perf_counter()
        rows = query(engine, sql, values).num_rows
        times.append(time.perf_counter() - began)
    return statistics.median(times), rows


def rows_in(engine: Engine, source: str, start: datetime, end: datetime) -> int:
    column = _bucket(source)
    found = query(
        engine,
        f"SELECT count(*) FROM {source} WHERE {column} >= $from AND {column} < $to",
        {"from": start, "to": end},
    )
    return int(found.column(0)[0].as_py())


KEYS = ("bucket", "metric", "host", "gpu", "uuid", "model", "labels")
VALUES = ("samples", "value_sum", "value_min", "value_max", "value_last", "last_ts")


def tiers_hold(engine: Engine, held: datetime) -> list[str]:
    """Each tier (its rows in the table and in blocks) equals the raw recompute over the first
    day raw samples still cover (all of it would take as long as the build): the same groups,
    counts, min, max and last exactly, sums to a relative 1e-12 (a sum folded batch by batch
    adds in another order than one pass does). Both sides read through `execute`, pruned."""
    problems = []
    on = " AND ".join(f"t.{k} IS NOT DISTINCT FROM q.{k}" for k in KEYS)
    differ = " OR ".join(
        f"abs(t.{v} - q.{v}) > 1e-12 * greatest(abs(q.{v}), 1)"
        if v == "value_sum"
        else f"t.{v} IS DISTINCT FROM q.{v}"
        for v in VALUES
    )
    for name, recompute in tiers.RECOMPUTE.items():
        width = "1 minute" if name.endswith("1m") else "1 hour"
        cutoff = f"time_bucket(INTERVAL '{width}', $held::TIMESTAMPTZ) + INTERVAL '{width}'"
        day = f"bucket >= {cutoff} AND bucket < {cutoff} + INTERVAL '1 day'"
        raw = recompute.replace(  # the samples of that day only
            "WHERE value IS NOT NULL",
            "WHERE value IS NOT NULL AND ts >= $held AND ts < $held + INTERVAL '26 hours'",
        )
        found = query(
            engine,
            f"SELECT count(*) FROM (SELECT * FROM {name} WHERE {day}) t "
            f"FULL JOIN (SELECT * FROM ({raw}) WHERE {day}) q ON {on} "
            f"WHERE t.bucket IS NULL OR q.bucket IS NULL OR {differ}",
            {"held": held},
        )
        bad = found.column(0)[0].as_py()
        if bad:
            problems.append(f"{name}: {bad} rows differ from the raw recompute")
    return problems


#: The tables whose bytes are reported; the rest of the file (dynamic tables, batch log,
#: inventory) is "everything else".
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--interval", type=float, default=60.0)
    parser.add_argument("--keep-days", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--folder", help="where the warehouse file goes (default: a temp folder)")
    parser.add_argument(
        "--keep", type=Path, help="build the warehouse in this new file, and keep it"
    )
    args = parser.parse_args()
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: the file exists")
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        path = args.keep or Path(folder) / "history.duckdb"
        with Engine(str(path)) as engine:
            engine.con.execute(f"SET threads = {args.threads}")
            began = time.perf_counter()
            built = build(engine, args)
            built_s = time.perf_counter() - began
            held = retention.held_from(engine.cursor(), "gpu_metrics")
            assert held is not None
            report(engine, args, built, built_s, held, path)


def report(
    engine: Engine,
    args: argparse.Namespace,
    built: Built,
    built_s: float,
    held: datetime,
    path: Path,
) -> None:
    keep = timedelta(days=args.keep_days)
    found, used = parts(engine)
    raw = found[0]
    rate = built.samples / max(built.seconds["ingest"] + built.upkeep_s, 1e-9)
    full = 10_000 * 16 * 30 * 86_400 / 60
    seconds = built.seconds
    print(
        f"{args.gpus:,} GPUs × {args.days} days at {args.interval:g} s"
        + (" (scaled from 10,000 GPUs: see the docstring)" if args.gpus != 10_000 else "")
        + f": {built.samples:,} samples ingested in {seconds['ingest']:.0f} s; "
        f"after each day the scheduler's pass: retention {seconds['retention']:.0f} s (it "
        "folds the new samples into the tiers first, so that they hold what it drops), the "
        f"tiers' own fold {seconds['tiers']:.0f} s (nothing left to fold), "
        f"compaction {seconds['compaction']:.0f} s "
        f"({built.moved.get('gpu_samples', 0):,} samples and "
        + ", ".join(f"{built.moved.get(t, 0):,} {w} tier rows" for t, w in tiers.TIERS.items())
        + f" moved into blocks), the shipped dynamic tables refreshed {seconds['refresh']:.0f} s "
        f"({built_s:.0f} s in all; ingest and upkeep {rate / 1e6:.2f} M samples/s, so 10,000 "
        f"GPUs × 30 days at 60 s, {full / 1e9:.1f}B samples, would take {full / rate / 3600:.1f} "
        f"h here); raw retention {args.keep_days} day(s): {raw.hot_rows + raw.cold_rows:,} samples "
        f"held from {held:%Y-%m-%d %H:%M}; file {path.stat().st_size / 1e9:.2f} GB, "
        f"{used / 1e9:.2f} GB in used blocks"
    )
    print()
    print("| part | rows hot | rows in blocks | MB hot | MB in blocks | B/row (B/sample for raw) |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in found:
        print(
            f"| {p.name} | {p.hot_rows:,} | {p.cold_rows:,} | {p.hot_bytes / 1e6:,.0f} "
            f"| {p.cold_bytes / 1e6:,.0f} | {p.per_row:.2f} |"
        )
    listed = sum(p.hot_bytes + p.cold_bytes for p in found)
    print(
        f"| everything else (dynamic tables, batch log, inventory) | | | | | "
        f"{max(used - listed, 0) / 1e6:,.0f} MB |"
    )
    print()
    print("| query | range | source | rows in range | median s (of 5) | result rows | ≤ 2 s |")
    print("|---|---|---|---:|---:|---:|---|")
    spans = {**RANGES, "month": built.end - START}
    worst = 0.0
    for q in QUERIES:
        for label, span in spans.items():
            source, step = source_for(span, keep)
            if "gpu_hourly_host" in q.sql("x", step):
                source = "gpu_hourly_host"  # a shipped rollup: it holds every hour
            values = {"from": built.end - span, "to": built.end}
            seconds_, got = timed(engine, q.sql(source, step), values)
            worst = max(worst, seconds_)
            read = rows_in(engine, source, built.end - span, built.end)
            ok = "yes" if seconds_ <= 2 else "NO"
            print(
                f"| {q.title} | last {label} | {source} | {read:,} | {seconds_:.3f} "
                f"| {got:,} | {ok} |"
            )
    problems = tiers_hold(engine, held)
    print()
    print(
        f"slowest query: {worst:.3f} s; tiers equal their definition over the raw range "
        f"still held: {not problems}{'' if not problems else ' — ' + '; '.join(problems)}"
    )
    print()
    print(
        f"A year on paper: {FIELDS} DCGM fields a GPU scraped every {SCRAPE_S} s, at the bytes "
        f"measured above (at {args.interval:g} s); shipped defaults: no retention rule (raw "
        "samples kept), both tiers kept (retention applies to gpu_metrics only)."
        + (
            f" Measured at {args.interval:g} s, a 1-minute bucket holds "
            f"{60 / args.interval:g} sample(s); at {SCRAPE_S} s it holds {60 // SCRAPE_S}, "
            "and a tier row of more than one sample stores its min, max and last beside its "
            "sum: run with --interval 15 for the 1-minute tier's bytes at that rate."
            if args.interval > SCRAPE_S
            else ""
        )
    )
    print()
    for line in estimate(found):
        print(line)


if __name__ == "__main__":
    main()
