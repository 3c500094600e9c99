"""bench_dynamic's per-job rows: the shipped per-job usage tables after 0.1 % telemetry appends,
each and together against the hourly rollup's refresh, and equal to their queries."""

from __future__ import annotations

import statistics
import sys
from functools import partial
from pathlib import Path

import duckdb
from dynamic_common import Appends, run, timed  # bench/ is the script's folder on sys.path

from warehouse.jobs import attribution
from warehouse.kernel.engine import Engine

ROOT = Path(__file__).resolve().parents[1]
#: The shipped per-job tables, in the order they refresh (the second reads the first).
JOB_TABLES = ("job_gpu_usage_daily", "job_gpu_usage_by_gpu", "job_gpu_usage")


def job_rows(
    engine: Engine, appender: Appends, base: int, repeats: int, hourly: float
) -> tuple[list[str], bool]:
    """The shipped per-job usage after a 0.1 % telemetry append: job_gpu_usage_by_gpu, then
    job_gpu_usage (which reads it), each timed and together, against the hourly rollup's."""
    cur = engine.cursor()
    attribution.sync_whole_nodes(cur)  # the jobs were inserted directly, not ingested
    for name in JOB_TABLES:
        run(cur, (ROOT / f"sql/dynamic/{name}.sql").read_text())
    rows = round(base * 0.001)
    # one round untimed: the first append brings GPUs and hosts the loaded hour did not (GPUs
    # back from repair, hosts whose first pod starts), a one-time change of gpu_attribution
    appender.append(rows)
    for name in JOB_TABLES:
        run(cur, f"REFRESH DYNAMIC TABLE {name}")
    auto: dict[str, list[float]] = {n: [] for n in JOB_TABLES}
    full: dict[str, list[float]] = {n: [] for n in JOB_TABLES}
    ok, modes = True, set()
    for _ in range(repeats):
        appender.append(rows)
        for name in JOB_TABLES:
            auto[name].append(timed(partial(run, cur, f"REFRESH DYNAMIC TABLE {name}")))
            modes.add(
                cur.execute(
                    "SELECT refresh_mode FROM wanka.refresh_history WHERE name = ? "
                    "ORDER BY finished_at DESC LIMIT 1",
                    [name],
                ).fetchall()[0][0]
            )
            if not same_rows(cur, name):
                print(f"{name} differs from its query", file=sys.stderr)
                ok = False
    for name in JOB_TABLES:  # once: a full refresh reads the labels of every sample
        full[name].append(timed(partial(run, cur, f"REFRESH DYNAMIC TABLE {name} FULL")))
    jobs = cur.execute("SELECT count(*) FROM job_gpu_usage").fetchall()[0][0]
    mode = "incremental" if modes == {"incremental"} else "/".join(sorted(modes))
    cur.close()
    lines = []
    both_full = sum(full[n][0] for n in JOB_TABLES)
    both_auto = statistics.median([sum(x) for x in zip(*auto.values(), strict=True)])
    cases = [(n, statistics.median(full[n]), statistics.median(auto[n])) for n in JOB_TABLES]
    cases.append((f"all three ({jobs:,} jobs)", both_full, both_auto))
    for label, f, a in cases:
        verdict = "yes" if a <= 2 * hourly else "NO"
        lines.append(
            f"| per-job usage: {label}, +0.1 % | {rows:,} | {f:.4f} | {a:.4f} ({mode}) | – "
            f"| {f / a:.1f}× | {a / hourly:.2f}× the hourly rollup's (≤ 2×: {verdict}) | – |"
        )
    return lines, ok  # the modes are in the table: a chained table goes full past the cost rule


def same_rows(cur: duckdb.DuckDBPyConnection, name: str) -> bool:
    """A dynamic table holds its query's rows: the same keys (its columns other than DOUBLE)
    and numbers equal to 1e-9 relative (sums fold in parts, so their last bits may differ)."""
    query = cur.execute(
        "SELECT definition FROM wanka.dynamic_tables WHERE name = ?", [name]
    ).fetchall()[0][0]
    columns = cur.execute(f"DESCRIBE {name}").fetchall()
    keys = [c for c, kind, *_ in columns if kind != "DOUBLE"]
    numbers = [c for c, kind, *_ in columns if kind == "DOUBLE"]
    on = " AND ".join(f"t.{k} IS NOT DISTINCT FROM q.{k}" for k in keys)
    differ = " OR ".join(
        f"(t.{c} IS NULL) <> (q.{c} IS NULL) OR abs(t.{c} - q.{c}) > 1e-9 * greatest(abs(q.{c}), 1)"
        for c in numbers
    )
    found = cur.execute(
        f"SELECT count(*) FROM {name} t FULL JOIN ({query}) q ON {on} WHERE NOT ({on}) OR {differ}"
    ).fetchall()[0][0]
    return int(found) == 0
