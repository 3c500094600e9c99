"""Reads of compressed telemetry blocks beside the native hot table: the same samples, one run.

One warehouse is built from the simulator (`--gpus` × `--hours` at `--interval`, 16 DCGM fields,
ingested as `wanka ingest` writes them), copied, and the copy compacted (`wanka compact`: every
window into blocks). Then each question runs on both files, the two taking turns, `--repeat`
times; the table prints medians and cold ÷ native:

- **SQL**, through the executor as every face runs it (so a bounded read of gpu_metrics decodes
  only the blocks it needs): one metric over the day, aggregated per host per hour and per GPU
  per hour; "power per host, last day" as bench_history asks it.
- **PromQL** range queries as the DCGM Grafana dashboard and VictoriaMetrics' comparison ask
  them, answered as the query API answers them (no HTTP): the fast path over decoded arrays
  where it takes the query, else the SQL route through the executor. The last
  `--promql-hours` at a 60 s step, and the whole span at a 5-minute step.
- **Coarse aggregates**: count, sum, min and max per metric per 2-hour window read from the
  block statistics, against the same aggregate over the decoded samples.
- **Decoding**: `warehouse.kernel.blocks.decode` of every block of one metric on one core.
- **A memory limit**: the per-GPU hourly query on the cold copy under `SET memory_limit`.

    .venv/bin/python bench/bench_cold_reads.py                      # 10,000 GPUs, 24 h at 60 s
    .venv/bin/python bench/bench_cold_reads.py --gpus 1000 --hours 6   # quick
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warehouse.kernel import blocks
from warehouse.kernel.engine import Engine
from warehouse.promql import render
from warehouse.promql.evaluate import range_query
from warehouse.query.executor import execute
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.tsdb import compact
from warehouse.tsdb.append import append

START = datetime(2026, 11, 1, tzinfo=UTC)
POWER = "DCGM_FI_DEV_POWER_USAGE"
TEMP = "DCGM_FI_DEV_GPU_TEMP"


def build(folder: Path, gpus: int, hours: float, interval_s: float) -> tuple[Path, Path, dict]:
    """The native warehouse and its compacted copy; figures of the build."""
    native = folder / "native.duckdb"
    cluster = simulate_cluster(
        SimConfig(gpus=gpus, hours=hours, interval_s=interval_s, start=START, seed=16)
    )
    figures: dict[str, float] = {}
    began = time.perf_counter()
    with Engine(str(native)) as eng:
        cur = eng.cursor()
        for batch in cluster.telemetry_batches(max_rows=2_000_000):
            append(cur, pa.Table.from_batches([batch]))
        [(figures["samples"],)] = cur.sql("SELECT count(*) FROM wanka.gpu_samples").fetchall()
        cur.execute("CHECKPOINT")
        cur.close()
    figures["ingest_s"] = time.perf_counter() - began
    cold = folder / "cold.duckdb"
    shutil.copy(native, cold)
    began, cpu = time.perf_counter(), time.process_time()
    with Engine(str(cold)) as eng:
        cur = eng.cursor()
        moved = compact.compact(cur, now=START + timedelta(hours=hours + 3))
        cur.execute("CHECKPOINT")
        cur.close()
    figures["compact_s"] = time.perf_counter() - began
    figures["compact_cpu_s"] = time.process_time() - cpu
    figures["blocks"] = sum(m.blocks for m in moved)
    figures["block_bytes"] = sum(m.bytes for m in moved)
    return native, cold, figures


def sql_questions(hours: float) -> dict[str, str]:
    end = START + timedelta(hours=hours)
    day = f"ts >= TIMESTAMPTZ '{end - timedelta(days=1)}' AND ts < TIMESTAMPTZ '{end}'"
    one = f"metric = '{POWER}' AND {day}"
    return {
        "power per host per hour, a day": (
            "SELECT host, time_bucket(INTERVAL 1 HOUR, ts) AS h, avg(value) AS w "
            f"FROM gpu_metrics WHERE {one} GROUP BY ALL"
        ),
        "power per GPU per hour, a day": (
            "SELECT host, gpu, time_bucket(INTERVAL 1 HOUR, ts) AS h, avg(value) AS w, "
            f"max(value) AS peak FROM gpu_metrics WHERE {one} GROUP BY ALL"
        ),
        "power per host, last day (bench_history)": (
            "SELECT host, avg(value) AS watts FROM gpu_metrics "
            f"WHERE {one} GROUP BY host ORDER BY watts DESC"
        ),
    }


def promql_questions(hours: float, promql_hours: float) -> dict[str, tuple[str, int, int, int]]:
    end_ms = int((START + timedelta(hours=hours)).timestamp() * 1000)
    last = end_ms - int(promql_hours * 3600_000)
    start_ms = int(START.timestamp() * 1000)
    return {
        f"dashboard: avg temp by host, {promql_hours:g} h": (
            f"avg by (Hostname) ({TEMP})",
            last,
            end_ms,
            60_000,
        ),
        f"dashboard: power of one host's GPUs, {promql_hours:g} h": (
            f'{POWER}{{Hostname="h100a0001"}}',
            last,
            end_ms,
            60_000,
        ),
        "VM: sum(power), whole span, 5 min": (f"sum({POWER})", start_ms, end_ms, 300_000),
        "VM: avg by host of avg_over_time 1h, 5 min": (
            f"avg by (Hostname) (avg_over_time({TEMP}[1h]))",
            start_ms,
            end_ms,
            300_000,
        ),
        "VM: max temp by model, 5 min": (f"max({TEMP}) by (modelName)", start_ms, end_ms, 300_000),
    }


COARSE_STATS = (
    "SELECT metric, window_start, sum(samples), sum(value_sum), min(value_min), max(value_max) "
    "FROM wanka.gpu_blocks GROUP BY ALL"
)
COARSE_DECODED = (
    "SELECT metric, time_bucket(INTERVAL 2 HOUR, ts, TIMESTAMPTZ 'epoch'), count(*), sum(value), "
    "min(value), max(value) FROM gpu_metrics GROUP BY ALL"
)


def timed(run: Callable[[], object]) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def sql_runner(cur: object, sql: str) -> Callable[[], object]:
    return lambda: execute(cur, sql, prepare=False).read_all()  # type: ignore[arg-type]


def promql_runner(cur: object, q: tuple[str, int, int, int]) -> Callable[[], object]:
    """The query as the query API answers it: the fast path over arrays where it takes the
    query (`warehouse.promql.native`), else the SQL route."""
    compiled = range_query(*q)

    def rows(sql: str) -> list[tuple[object, ...]]:
        table = execute(cur, sql).read_all()  # type: ignore[arg-type]
        return list(zip(*(c.to_pylist() for c in table.columns), strict=True))

    def tables(sql: str, params: dict[str, object]) -> pa.Table:
        return execute(cur, sql, params).read_all()  # type: ignore[arg-type]

    return lambda: render.answer(compiled, rows, tables)


def decode_rate(cur: object) -> tuple[float, int]:
    """Samples per second decoding every block of one metric on this thread."""
    data = [
        bytes(d)
        for (d,) in cur.sql(  # type: ignore[attr-defined]
            f"SELECT data FROM wanka.gpu_blocks WHERE metric = '{POWER}'"
        ).fetchall()
    ]
    began = time.perf_counter()
    count = sum(len(blocks.decode(d)) for d in data)
    return count / (time.perf_counter() - began), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--interval", type=float, default=60)
    parser.add_argument("--promql-hours", type=float, default=6)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--dir", type=Path, default=None, help="keep the files here")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="wanka-cold-"))
    folder.mkdir(parents=True, exist_ok=True)
    native, cold, figures = build(folder, args.gpus, args.hours, args.interval)
    samples = int(figures["samples"])
    print(
        f"{args.gpus:,} GPUs · {args.interval:g} s · {args.hours:g} h: {samples:,} samples; "
        f"ingest {figures['ingest_s']:.1f} s; compaction {figures['compact_s']:.1f} s "
        f"({figures['compact_cpu_s']:.1f} CPU s, {samples / figures['compact_s'] / 1e6:.1f}M "
        f"samples/s), {int(figures['blocks']):,} blocks, "
        f"{figures['block_bytes'] / samples:.3f} B/sample in blocks\n"
    )
    engines = {
        "native": Engine(str(native), read_only=True),
        "cold": Engine(str(cold), read_only=True),
    }
    curs = {name: eng.cursor() for name, eng in engines.items()}
    questions: dict[str, dict[str, Callable[[], object]]] = {}
    for name, sql in sql_questions(args.hours).items():
        questions[f"SQL {name}"] = {k: sql_runner(c, sql) for k, c in curs.items()}
    for name, q in promql_questions(args.hours, args.promql_hours).items():
        questions[f"PromQL {name}"] = {k: promql_runner(c, q) for k, c in curs.items()}
    times: dict[str, dict[str, list[float]]] = {q: {"native": [], "cold": []} for q in questions}
    for _ in range(args.repeat):
        for question, runs in questions.items():
            for name in ("native", "cold"):
                times[question][name].append(timed(runs[name]))
    print("| question | native s | cold s | cold ÷ native |")
    print("|---|---:|---:|---:|")
    for question, found in times.items():
        a, b = statistics.median(found["native"]), statistics.median(found["cold"])
        print(f"| {question} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    cur = curs["cold"]
    stats = [timed(sql_runner(cur, COARSE_STATS)) for _ in range(args.repeat)]
    decoded = [timed(sql_runner(cur, COARSE_DECODED)) for _ in range(max(1, args.repeat // 2))]
    s, d = statistics.median(stats), statistics.median(decoded)
    print(
        f"\ncoarse aggregates per metric per 2 h: block statistics {s * 1000:.1f} ms, "
        f"decoding {d:.3f} s: {d / s:.0f}× faster from the statistics"
    )
    rate, count = decode_rate(cur)
    print(f"decoding on one core: {rate / 1e6:.0f}M samples/s ({count:,} samples of {POWER})")
    limited = Engine(str(cold), read_only=True)
    limited.lock_down(memory_limit=args.memory_limit)
    lcur = limited.cursor()
    question = "power per GPU per hour, a day"
    try:
        spent = timed(sql_runner(lcur, sql_questions(args.hours)[question]))
        print(f"under memory_limit {args.memory_limit}: '{question}' on blocks took {spent:.3f} s")
    except Exception as error:
        print(f"under memory_limit {args.memory_limit}: '{question}' failed: {error}")
    for c in (*curs.values(), lcur):
        c.close()
    for eng in (*engines.values(), limited):
        eng.close()
    if args.dir is None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
