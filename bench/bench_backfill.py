"""Late data: a 30-day backfill arriving in random order, under a 1 GB DuckDB memory limit.

A warehouse (DuckDB `memory_limit = '1GB'`) holds the last hour of a simulated cluster and the
shipped dynamic tables. Then 30 days of earlier telemetry of the same GPUs arrive, one day a
batch, the days in random order, and after each batch every shipped table is refreshed: the
hourly rollup merges the batch into the hours it touches and nothing else. Last, one batch
scattered over 48 random hours of the month (held back from their days). For each refresh of
`gpu_hourly_host` it prints the rows the batch brought, the hour groups it touched, the time,
and the time per touched group
— flat if the cost follows the touched buckets, not the table (which grows 30× meanwhile) —
then checks every shipped table equals its query.

    .venv/bin/python bench/bench_backfill.py [--gpus 1000] [--days 30] [--interval 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warehouse.dynamic import catalog
from warehouse.dynamic.shipped import install_shipped, shipped_folder
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.tsdb.append import append

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def insert(engine: Engine, rows: pa.Table) -> int:
    """One batch: a new batch id on every row, one transaction."""
    with engine.transaction() as cur:
        batch = cur.sql("SELECT nextval('wanka.batch_seq')").fetchall()[0][0]
        tagged = rows.append_column("batch_id", pa.array(np.full(rows.num_rows, batch)))
        return append(cur, tagged).gpu


def refresh(engine: Engine, name: str) -> tuple[float, str]:
    cur = engine.cursor()
    began = time.perf_counter()
    done = execute(cur, f"REFRESH DYNAMIC TABLE {name}").read_all().to_pylist()[0]
    seconds = time.perf_counter() - began
    cur.close()
    return seconds, str(done["refresh_mode"])


def equal_to_query(engine: Engine, name: str) -> str | None:
    """None when the table holds its query's rows (keys and counts exactly, doubles to a
    relative 1e-9: sums fold batch by batch), else the first difference."""
    cur = engine.cursor()
    try:
        plan = catalog.load(cur, name).plan
        kinds = cur.execute(f'DESCRIBE "{name}"').fetchall()
        names = [c for c, *_ in kinds]
        keys = [names[p] for p in plan.key_positions] or names
        on = " AND ".join(f't."{k}" IS NOT DISTINCT FROM q."{k}"' for k in keys)
        differs = " OR ".join(
            f'abs(t."{c}" - q."{c}") > 1e-9 * greatest(abs(q."{c}"), 1) '
            f'OR (t."{c}" IS NULL) <> (q."{c}" IS NULL)'
            if kind == "DOUBLE"
            else f't."{c}" IS DISTINCT FROM q."{c}"'
            for c, kind, *_ in kinds
            if c not in keys
        )
        missing = " OR ".join(f't."{k}" IS NULL AND q."{k}" IS NOT NULL' for k in keys[:1])
        extra = " OR ".join(f'q."{k}" IS NULL AND t."{k}" IS NOT NULL' for k in keys[:1])
        found = cur.execute(
            f'SELECT * FROM "{name}" t FULL JOIN ({plan.query}) q ON {on} '
            f"WHERE {' OR '.join(x for x in (differs, missing, extra) if x)} LIMIT 1"
        ).fetchall()
        return repr(found[0]) if found else None
    finally:
        cur.close()


def touched_hours(rows: pa.Table) -> int:
    """Distinct (hour, host) groups of the hourly rollup the rows fall in."""
    hours = pc.cast(rows["ts"], pa.int64()).to_numpy() // 3_600_000_000
    hosts = pc.dictionary_encode(rows["host"].cast(pa.string())).combine_chunks().indices
    return len(np.unique(hours * 1_000_000 + hosts.to_numpy()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--interval", type=float, default=600.0, help="scrape interval, s")
    parser.add_argument("--memory-limit", default="1GB")
    args = parser.parse_args()
    rng = np.random.default_rng(16)
    started = time.perf_counter()
    cluster = simulate_cluster(
        SimConfig(
            gpus=args.gpus,
            hours=args.days * 24 + 1,
            interval_s=args.interval,
            start=NOW - timedelta(days=args.days),
            seed=16,
        )
    )
    table = pa.Table.from_batches(list(cluster.telemetry_batches(max_rows=4_000_000)))
    day = pc.cast(table["ts"], pa.int64()).to_numpy() // 86_400_000_000
    first_day = int(day.min())
    with tempfile.TemporaryDirectory() as tmp, Engine(str(Path(tmp) / "w.duckdb")) as engine:
        engine.con.execute(f"SET memory_limit = '{args.memory_limit}'")
        cur = engine.cursor()
        for name, rows in cluster.tables().items():
            engine.insert_arrow(cur, name, rows)
        cur.close()
        last = day >= first_day + args.days  # the current hour
        insert(engine, table.filter(pa.array(last)))
        install_shipped(engine)
        names = [p.stem for p in sorted(shipped_folder().glob("*.sql"))]
        print(
            f"{args.gpus:,} GPUs, {args.days} days at {args.interval:g} s: {table.num_rows:,} "
            f"samples simulated in {time.perf_counter() - started:.1f} s; memory_limit "
            f"{args.memory_limit}; then the days in random order, each refreshed"
        )
        print()
        print("| batch | rows | hour×host groups touched | held rows | refresh ms | µs per group |")
        print("|---|---:|---:|---:|---:|---:|")
        per_group = []
        held = int(np.count_nonzero(last))
        hours = (pc.cast(table["ts"], pa.int64()).to_numpy() // 3_600_000_000).astype(np.int64)
        picked = rng.choice(np.unique(hours[~last]), size=48, replace=False)
        scattered = np.isin(hours, picked) & ~last  # held back from their days, sent last
        order = rng.permutation(args.days)
        batches = [(f"day {int(d) + 1}", (day == first_day + int(d)) & ~scattered) for d in order]
        batches.append(("48 random hours", scattered))
        for label, mask in batches:
            rows = table.filter(pa.array(mask))
            held += insert(engine, rows)
            engine.con.execute("CHECKPOINT")  # the ingest's, not the refresh's, to pay
            groups = touched_hours(rows)
            seconds, mode = refresh(engine, "gpu_hourly_host")
            for other in names:
                if other != "gpu_hourly_host":
                    refresh(engine, other)
            per_group.append(seconds / groups * 1e6)
            print(
                f"| {label} ({mode}) | {rows.num_rows:,} | {groups:,} | {held:,} | "
                f"{seconds * 1000:.1f} | {seconds / groups * 1e6:.1f} |",
                flush=True,
            )
        wrong = {name: equal_to_query(engine, name) for name in names}
        ok = not any(wrong.values())
        third = len(per_group) // 3
        first, rest = per_group[:third], per_group[-third - 1 : -1]
        early, late = statistics.median(first), statistics.median(rest)
        print()
        print(
            f"µs per touched group: median {statistics.median(per_group):.1f}; first {third} "
            f"days {early:.1f}, last {third} {late:.1f} (ratio {late / early:.2f} while the "
            f"table grew {held / max(1, int(np.count_nonzero(last))):.0f}×; "
            f"flat ≤ 1.3: {'yes' if late <= 1.3 * early else 'NO'})"
        )
        print(f"every shipped table equals its query after the backfill: {ok}")
        for name, row in wrong.items():
            if row:
                print(f"  {name} differs, e.g. {row}")
        if not ok:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
