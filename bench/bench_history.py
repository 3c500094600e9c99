"""A month of telemetry on one machine: raw retention, the downsampling tiers, queries over it.

A warehouse takes `--days` of a simulated cluster's DCGM telemetry a day at a time, as a live
one would: each day's samples in batches of ≤ 2M rows, then the scheduler's work at that day's
end — the new samples folded into the 1-minute and 1-hour tiers, every shipped dynamic table
refreshed (incrementally) and the raw retention rule applied (`--keep-days` of raw samples; the
tiers keep the rest). Then it times the queries
people ask of a month, over the last hour, day, week and month, each on the data that covers
that range: raw samples where retention still holds them, else the 1-minute tier for a day and
the 1-hour tier for a week or a month (Grafana asks at ~1,000 points a panel, so a week is
drawn from hours, not minutes). Every query runs 5 times; the table prints the median and the
rows it read from. Last it checks each tier equals the raw recompute over the range raw
samples still cover.

    .venv/bin/python bench/bench_history.py [--gpus 1000] [--days 30] [--keep-days 7]

The size the product is for is 10,000 GPUs for 30 days at 60 s: 6.9 billion samples, and as
many rows again in the 1-minute tier. This VM (2 vCPUs, ~75 GB free) runs a scaled cluster by
default (`--gpus`), and the table says which; the rows a query reads grow with the GPUs in
proportion, and that row count is printed beside each time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warehouse.dynamic.refresh import refresh
from warehouse.dynamic.shipped import install_shipped, shipped_folder
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.tsdb import retention, tiers
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


def build(engine: Engine, args: argparse.Namespace) -> tuple[int, float, float, datetime]:
    """Ingest the month day by day with the scheduler's work between; (samples, ingest s with
    the tiers, refresh + retention s, the end)."""
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
    samples, ingest_s, upkeep_s = 0, 0.0, 0.0
    day_end = START + timedelta(days=1)
    names = sorted(p.stem for p in shipped_folder().glob("*.sql"))

    def upkeep(now: datetime) -> float:
        began = time.perf_counter()
        tiers.fold(cur)
        for name in names:
            refresh(cur, name, data_timestamp=now)
        retention.apply(cur, now)
        return time.perf_counter() - began

    for batch in cluster.telemetry_batches(max_rows=2_000_000):
        table = pa.Table.from_batches([batch])
        first = table["ts"][0].as_py()
        while first >= day_end:
            upkeep_s += upkeep(day_end)
            print(f"  day to {day_end:%m-%d}: {samples:,} samples", file=sys.stderr)
            day_end += timedelta(days=1)
        began = time.perf_counter()
        with engine.transaction() as tx:
            samples += append(tx, table).gpu
        ingest_s += time.perf_counter() - began
    end = pc.max(table["ts"]).as_py() + timedelta(seconds=args.interval)
    upkeep_s += upkeep(end)
    cur.execute("CHECKPOINT")
    cur.close()
    return samples, ingest_s, upkeep_s, end


def timed(engine: Engine, sql: str, values: dict[str, object]) -> tuple[float, int]:
    cur = engine.cursor()
    times, rows = [], 0
    for _ in range(5):
        began = time.perf_counter()
        rows = len(cur.execute(sql, values).fetchall())
        times.append(time.perf_counter() - began)
    cur.close()
    return statistics.median(times), rows


def rows_in(engine: Engine, source: str, start: datetime, end: datetime) -> int:
    column = _bucket(source)
    [(n,)] = engine.con.execute(
        f"SELECT count(*) FROM {source} WHERE {column} >= ? AND {column} < ?", [start, end]
    ).fetchall()
    return int(n)


KEYS = ("bucket", "metric", "host", "gpu", "uuid", "model", "labels")
VALUES = ("samples", "value_sum", "value_min", "value_max", "value_last", "last_ts")


def tiers_hold(engine: Engine, held: datetime) -> list[str]:
    """Each tier equals the raw recompute over the first day raw samples still cover (all of
    it would take as long as the build): the same groups, counts, min, max and last exactly,
    sums to a relative 1e-12 (a sum folded batch by batch adds in another order than one pass
    does)."""
    problems = []
    cur = engine.cursor()
    on = " AND ".join(f"t.{k} IS NOT DISTINCT FROM q.{k}" for k in KEYS)
    differ = " OR ".join(
        f"abs(t.{v} - q.{v}) > 1e-12 * greatest(abs(q.{v}), 1)"
        if v == "value_sum"
        else f"t.{v} IS DISTINCT FROM q.{v}"
        for v in VALUES
    )
    for name, query in tiers.RECOMPUTE.items():
        width = "1 minute" if name.endswith("1m") else "1 hour"
        cutoff = f"time_bucket(INTERVAL '{width}', $held::TIMESTAMPTZ) + INTERVAL '{width}'"
        day = f"bucket >= {cutoff} AND bucket < {cutoff} + INTERVAL '1 day'"
        raw = query.replace(  # the samples of that day only
            "WHERE value IS NOT NULL",
            "WHERE value IS NOT NULL AND ts >= $held AND ts < $held + INTERVAL '26 hours'",
        )
        [(bad,)] = cur.execute(
            f"SELECT count(*) FROM (SELECT * FROM {name} WHERE {day}) t "
            f"FULL JOIN (SELECT * FROM ({raw}) WHERE {day}) q ON {on} "
            f"WHERE t.bucket IS NULL OR q.bucket IS NULL OR {differ}",
            {"held": held},
        ).fetchall()
        if bad:
            problems.append(f"{name}: {bad} rows differ from the raw recompute")
    cur.close()
    return problems


def table_bytes(engine: Engine) -> dict[str, int]:
    """Bytes of each table's column segments on disk (DuckDB's storage_info), by table."""
    found = {}
    for schema, name in engine.con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE table_name IN "
        "('gpu_samples', 'gpu_series', 'gpu_tier_1m', 'gpu_tier_1h')"
    ).fetchall():
        [(blocks,)] = engine.con.execute(
            f"SELECT count(DISTINCT block_id) FROM pragma_storage_info('{schema}.\"{name}\"') "
            "WHERE persistent"
        ).fetchall()
        found[name] = int(blocks) * 262_144
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--interval", type=float, default=60.0)
    parser.add_argument("--keep-days", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.duckdb"
        with Engine(str(path)) as engine:
            engine.con.execute(f"SET threads = {args.threads}")
            began = time.perf_counter()
            samples, ingest_s, upkeep_s, end = build(engine, args)
            built_s = time.perf_counter() - began
            held = retention.held_from(engine.cursor(), "gpu_metrics")
            assert held is not None
            report(engine, args, samples, ingest_s, upkeep_s, built_s, end, held, path)


def report(
    engine: Engine,
    args: argparse.Namespace,
    samples: int,
    ingest_s: float,
    upkeep_s: float,
    built_s: float,
    end: datetime,
    held: datetime,
    path: Path,
) -> None:
    keep = timedelta(days=args.keep_days)
    [(raw,)] = engine.con.execute("SELECT count(*) FROM wanka.gpu_samples").fetchall()
    sizes = table_bytes(engine)
    print(
        f"{args.gpus:,} GPUs × {args.days} days at {args.interval:g} s (scaled from 10,000 GPUs: "
        f"see the docstring): {samples:,} samples ingested in {ingest_s:.0f} s; after each day "
        "the tiers folded, the shipped dynamic tables refreshed and retention applied in "
        f"{upkeep_s:.0f} s "
        f"({built_s:.0f} s in all); raw retention {args.keep_days} days: {raw:,} samples held "
        f"from {held:%Y-%m-%d %H:%M}; file {path.stat().st_size / 1e9:.2f} GB"
    )
    print()
    print("| table | rows | MB on disk | B/row |")
    print("|---|---:|---:|---:|")
    for name in ("gpu_samples", "gpu_series", "gpu_tier_1m", "gpu_tier_1h"):
        [(n,)] = engine.con.execute(f'SELECT count(*) FROM wanka."{name}"').fetchall()
        size = sizes.get(name, 0)
        print(f"| wanka.{name} | {n:,} | {size / 1e6:,.0f} | {size / max(n, 1):.2f} |")
    print()
    print("| query | range | source | rows in range | median s (of 5) | result rows | ≤ 2 s |")
    print("|---|---|---|---:|---:|---:|---|")
    spans = {**RANGES, "month": end - START}
    worst = 0.0
    for query in QUERIES:
        for label, span in spans.items():
            source, step = source_for(span, keep)
            if "gpu_hourly_host" in query.sql("x", step):
                source = "gpu_hourly_host"  # a shipped rollup: it holds every hour
            values = {"from": end - span, "to": end}
            seconds, got = timed(engine, query.sql(source, step), values)
            worst = max(worst, seconds)
            read = rows_in(engine, source, end - span, end)
            ok = "yes" if seconds <= 2 else "NO"
            print(
                f"| {query.title} | last {label} | {source} | {read:,} | {seconds:.3f} "
                f"| {got:,} | {ok} |"
            )
    problems = tiers_hold(engine, held)
    print()
    print(
        f"slowest query: {worst:.3f} s; tiers equal their definition over the raw range "
        f"still held: {not problems}{'' if not problems else ' — ' + '; '.join(problems)}"
    )


if __name__ == "__main__":
    main()
