"""Dynamic tables: incremental vs full refresh vs aggregating the delta alone, on ~10M rows.

An Engine on a temporary file holds ~10M simulated gpu_metrics rows (10,000 GPUs, one scrape a
minute, about an hour), and the shipped hourly per-host rollup (sql/dynamic/gpu_hourly_host.sql)
as a dynamic table. For appends of 0.1 % and 1 % of the rows — the next scrapes' telemetry, half
from scrapes whose hour the table already holds (existing groups), half from the next hour (new
groups), each append its own batch id — it times, median of 5 with a fresh append each time:

- `REFRESH DYNAMIC TABLE ...` (incremental),
- `REFRESH DYNAMIC TABLE ... FULL`,
- the plain GROUP BY over just the appended rows (`WHERE batch_id > lo`), fetched,

checks after every incremental refresh that the table equals its query, and prints a markdown
table with the targets (full/incremental ≥ 50× at 0.1 %, ≥ 10× at 1 %; incremental/delta ≤ 2×).
More rows: a count(DISTINCT ...) rollup (affected groups, or full past the cost rule) and a
rollup joining `nodes`, after a fact append and after a dimension update, each with the mode
and reason the refresh recorded. The ceiling column is full / delta-only: no incremental refresh
can be faster than aggregating the appended rows alone, so a full/incremental target above it
cannot be met on this machine by any strategy. Then where an incremental refresh spends its time,
statement by statement (DuckDB's own timings are not used: the wall clock of each `execute` is).

    .venv/bin/python bench/bench_dynamic.py [--gpus 10000] [--repeats 5] [--threads N]
    .venv/bin/python bench/bench_dynamic.py --rows 1e9     # the same appends on 1B rows of history

bench/bench_refresh_history.py compares the incremental refresh across history sizes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dynamic_common import run, timed  # bench/ is the script's folder on sys.path
from dynamic_jobs import job_rows
from refresh_profile import profile

from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.simulate.config import DEFAULT_START
from warehouse.tsdb.append import append

ROOT = Path(__file__).resolve().parents[1]
ROLLUP = (ROOT / "sql/dynamic/gpu_hourly_host.sql").read_text()
#: The rollup's query: the text after the first AS that opens the SELECT.
ROLLUP_SELECT = ROLLUP[ROLLUP.index("AS\nSELECT") + 3 :].strip().rstrip(";")
DELTA_SELECT = ROLLUP_SELECT.replace(
    "WHERE metric IN", "WHERE batch_id > $lo AND metric IN"
)  # the same GROUP BY over the appended rows only

DISTINCT_SQL = """CREATE DYNAMIC TABLE gpu_hourly_distinct WITH (freshness = '5 minutes') AS
SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, count(DISTINCT gpu) AS gpus,
       count(*) AS samples
FROM gpu_metrics WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' GROUP BY ALL"""

JOIN_SQL = """CREATE DYNAMIC TABLE gpu_hourly_cluster WITH (freshness = '5 minutes') AS
SELECT time_bucket(INTERVAL '1 hour', m.ts) AS hour, n.cluster, avg(m.value) AS util_pct,
       count(*) AS samples
FROM gpu_metrics AS m JOIN nodes AS n ON n.host = m.host
WHERE m.metric = 'DCGM_FI_DEV_GPU_UTIL' GROUP BY ALL"""

SCRAPES_BEFORE_HOUR = 5  # the window opens 5 minutes before the hour: two hours of groups
POOL_SCRAPES = 3  # scrapes held back on each side of the next hour, for the appends


class Appender:
    """Fresh appends from two shuffled pools: scrapes of an hour the table holds, and the next."""

    def __init__(self, engine: Engine, existing: pa.Table, new: pa.Table) -> None:
        rng = np.random.default_rng(7)
        self.engine = engine
        self.pools = [p.take(rng.permutation(p.num_rows)) for p in (existing, new)]
        self.used = [0, 0]

    def append(self, rows: int) -> int:
        """Insert `rows` new rows under a new batch id; returns the batch id."""
        cur = self.engine.cursor()
        batch_id = int(cur.execute("SELECT nextval('wanka.batch_seq')").fetchall()[0][0])
        parts = []
        for i, n in enumerate((rows // 2, rows - rows // 2)):
            if self.used[i] + n > self.pools[i].num_rows:
                raise SystemExit("the append pool ran out: lower --repeats")
            parts.append(self.pools[i].slice(self.used[i], n))
            self.used[i] += n
        data = pa.concat_tables(parts)
        data = data.append_column("batch_id", pa.array(np.full(data.num_rows, batch_id)))
        append(cur, data)
        cur.close()
        return batch_id


def same_as_query(cur: duckdb.DuckDBPyConnection, table: str, select: str) -> bool:
    """The dynamic table holds its query's rows: same keys, counts, maxima; averages to 1e-9.

    Averages are sum / count folded batch by batch, so their last bits may differ from avg().
    """
    rows = cur.execute(
        f"SELECT count(*) FROM {table} AS t FULL JOIN ({select}) AS q USING (hour, host) "
        "WHERE t.samples IS DISTINCT FROM q.samples OR t.max_power_w IS DISTINCT FROM "
        "q.max_power_w OR abs(t.util_pct - q.util_pct) > 1e-9 * abs(q.util_pct) "
        "OR abs(t.power_w - q.power_w) > 1e-9 * abs(q.power_w) "
        "OR (t.util_pct IS NULL) <> (q.util_pct IS NULL) "
        "OR (t.power_w IS NULL) <> (q.power_w IS NULL)"
    ).fetchall()
    return int(rows[0][0]) == 0


def load(engine: Engine, gpus: int, history_rows: int = 0) -> tuple[int, pa.Table, pa.Table, int]:
    """Simulate and load the base rows; returns their count, the two append pools and the rows
    held in all.

    With `history_rows`, whole earlier hours come first (the base hour's scrapes shifted back an
    hour at a time, oldest first, each 12 scrapes a batch) until about that many rows are held:
    the same appends then land on a table with that much history.
    """
    hours = (60 + 3 * POOL_SCRAPES + 0.5) / 60  # leaves a few scrapes past the pools' hour
    cfg = SimConfig(
        gpus=gpus,
        hours=hours,
        interval_s=60,
        start=DEFAULT_START - timedelta(minutes=SCRAPES_BEFORE_HOUR),
    )
    cluster = simulate_cluster(cfg)
    cur = engine.cursor()
    for name, table in cluster.tables().items():
        engine.insert_arrow(cur, name, table)
    scrapes = list(cluster.telemetry_batches(max_rows=1))  # one scrape a batch
    base_scrapes = 60 + SCRAPES_BEFORE_HOUR - POOL_SCRAPES
    base = held = 0
    hour_rows = sum(b.num_rows for b in scrapes[:60])
    for back in range(
        round(max(0, history_rows - base_scrapes / 60 * hour_rows) / hour_rows), 0, -1
    ):
        for k0 in range(0, 60, 12):
            chunk = pa.Table.from_batches(scrapes[k0 : k0 + 12])
            shifted = pc.subtract(
                chunk["ts"].cast(pa.int64()), pa.scalar(back * 3_600_000_000)
            ).cast(chunk["ts"].type)
            chunk = chunk.set_column(chunk.column_names.index("ts"), "ts", shifted)
            batch_id = int(cur.execute("SELECT nextval('wanka.batch_seq')").fetchall()[0][0])
            chunk = chunk.append_column("batch_id", pa.array(np.full(chunk.num_rows, batch_id)))
            held += append(cur, chunk).gpu
    for k0 in range(0, base_scrapes, 12):  # ingest-sized batches of 12 scrapes, own batch ids
        chunk = pa.Table.from_batches(scrapes[k0 : min(base_scrapes, k0 + 12)])
        batch_id = int(cur.execute("SELECT nextval('wanka.batch_seq')").fetchall()[0][0])
        chunk = chunk.append_column("batch_id", pa.array(np.full(chunk.num_rows, batch_id)))
        base += append(cur, chunk).gpu
    existing = pa.Table.from_batches(scrapes[base_scrapes : base_scrapes + POOL_SCRAPES])
    new = pa.Table.from_batches(scrapes[base_scrapes + POOL_SCRAPES :])
    cur.execute("CHECKPOINT")
    cur.close()
    return base, existing, new, held + base


def incremental_rows(
    engine: Engine, appender: Appender, base: int, repeats: int
) -> tuple[list[str], bool, float]:
    """The hourly rollup's rows, whether it stayed equal to its query, and its median
    incremental refresh after a 0.1 % append (the yardstick of the per-job row)."""
    lines, ok, yardstick = [], True, 0.0
    cur = engine.cursor()
    for share in (0.001, 0.01):
        rows = round(base * share)
        inc, full, delta = [], [], []
        for _ in range(repeats):
            lo = int(
                cur.execute(
                    "SELECT watermark FROM wanka.dynamic_tables WHERE name = 'gpu_hourly_host'"
                ).fetchall()[0][0]
            )
            appender.append(rows)
            delta.append(timed(partial(run, cur, DELTA_SELECT, {"lo": lo})))
            inc.append(timed(lambda: run(cur, "REFRESH DYNAMIC TABLE gpu_hourly_host")))
            ok &= same_as_query(cur, "gpu_hourly_host", ROLLUP_SELECT)
            mode = cur.execute(
                "SELECT refresh_mode FROM wanka.refresh_history WHERE name = 'gpu_hourly_host' "
                "ORDER BY finished_at DESC LIMIT 1"
            ).fetchall()[0][0]
            ok &= mode == "incremental"
        # FULL refreshes after the incremental ones: a FULL rewrites the whole state, and the
        # checkpoint its writes call for would otherwise land in the next incremental commit
        for _ in range(repeats):
            full.append(timed(lambda: run(cur, "REFRESH DYNAMIC TABLE gpu_hourly_host FULL")))
        cur.execute("CHECKPOINT")
        f, i, d = (statistics.median(x) for x in (full, inc, delta))
        yardstick = yardstick or i
        target = 50 if share < 0.005 else 10
        lines.append(
            f"| hourly per-host rollup, +{share:.1%} | {rows:,} | {f:.4f} | {i:.4f} | {d:.4f} "
            f"| {f / i:.1f}× (≥ {target}×: {'yes' if f / i >= target else 'NO'}) "
            f"| {i / d:.2f}× (≤ 2×: {'yes' if i / d <= 2 else 'NO'}) | {f / d:.1f}× |"
        )
    cur.close()
    return lines, ok, yardstick


def other_rows(engine: Engine, appender: Appender, base: int, repeats: int) -> list[str]:
    """Affected-groups shapes: what one automatic refresh costs after a small change."""
    cur = engine.cursor()
    run(cur, DISTINCT_SQL)
    run(cur, JOIN_SQL)
    rows = round(base * 0.001)
    cases = [
        ("count(DISTINCT) rollup, +0.1 %", "gpu_hourly_distinct", lambda: appender.append(rows)),
        ("join with nodes, +0.1 % telemetry", "gpu_hourly_cluster", lambda: appender.append(rows)),
        (
            "join with nodes, 1 node updated",
            "gpu_hourly_cluster",
            lambda: cur.execute(
                "UPDATE nodes SET cluster = cluster || '' "
                "WHERE host = (SELECT min(host) FROM nodes)"
            ),
        ),
    ]
    lines = []
    for label, table, change in cases:
        auto, full = [], []
        mode = reason = ""
        for _ in range(repeats):
            change()
            auto.append(timed(partial(run, cur, f"REFRESH DYNAMIC TABLE {table}")))
            mode, reason = cur.execute(
                "SELECT refresh_mode, refresh_mode_reason FROM wanka.refresh_history "
                "WHERE name = ? ORDER BY finished_at DESC LIMIT 1",
                [table],
            ).fetchall()[0]
            full.append(timed(partial(run, cur, f"REFRESH DYNAMIC TABLE {table} FULL")))
        f, a = statistics.median(full), statistics.median(auto)
        lines.append(
            f"| {label} | {1 if 'updated' in label else rows:,} | {f:.4f} | {a:.4f} ({mode}) "
            f"| – | {f / a:.1f}× | – | – |"
        )
        lines.append(f"|   ↳ reason: {reason} | | | | | | | |")
    cur.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: its default)")
    parser.add_argument(
        "--rows",
        type=float,
        default=0,
        help="hold about this many rows of history before the appends (e.g. 1e9); appends stay "
        "0.1 %% / 1 %% of one hour of telemetry",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Engine(str(Path(tmp) / "bench.duckdb")) as engine:
        if args.threads:
            engine.con.execute(f"SET threads = {args.threads}")
        began = time.perf_counter()
        base, existing, new, held = load(engine, args.gpus, int(args.rows))
        cur = engine.cursor()
        run(cur, ROLLUP)
        cur.close()
        threads = engine.con.execute("SELECT current_setting('threads')").fetchall()[0][0]
        print(
            f"{held:,} gpu_metrics rows loaded ({held - base:,} of them earlier hours; appends "
            f"are shares of the last {base:,}) and the rollup created in "
            f"{time.perf_counter() - began:.1f} s; duckdb {duckdb.__version__}, {threads} threads"
        )
        appender = Appender(engine, existing, new)
        print()
        print(
            "| case | append rows | full s | incremental s | delta-only s "
            "| full / incremental | incremental / delta | ceiling: full / delta |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        lines, ok, hourly = incremental_rows(engine, appender, base, args.repeats)
        print("\n".join(lines), flush=True)
        lines, jobs_ok = job_rows(engine, appender, base, args.repeats, hourly)
        print("\n".join(lines), flush=True)
        ok &= jobs_ok
        print("\n".join(other_rows(engine, appender, base, args.repeats)))
        print()
        print("incremental result equals the full query after every refresh:", ok)
        print()
        print("\n".join(profile(engine, appender, base)))
        if not ok:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
