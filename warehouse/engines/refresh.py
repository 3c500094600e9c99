"""Refresh the dynamic tables of a lake on any engine (`wanka refresh --engine spark`).

Per dynamic table, one Delta commit carrying its new watermark (the highest batch id of its
sources it reflects), so a refresh is atomic and a re-run after a crash starts from the last
commit that made it:

- nothing newer than the watermark in any source → `unchanged`, no commit;
- only appends to the one time series the table buckets by (the lake's commit log says so),
  and a time bucket among its groups (`window.time_window`) → `window`: the buckets the new
  rows fall in are recomputed from the files of those days only (partition pruning by the Delta
  log's statistics) and replace exactly those buckets' rows (`overwrite` with a predicate) —
  proportional to the new data, and idempotent (re-running it rewrites the same buckets);
- a filter/projection of one table that only grew → `append`: the query over the files added
  since the watermark, appended (on Spark: files written by its tasks, one delta-rs commit);
- anything else (a MERGE or rewrite of a source, a changed dimension, a query without a time
  bucket, `--full`) → `full`: the whole table recomputed and overwritten, with the reason.

The rows are computed by the engine (Spark: distributed; results are aggregates, small) and
committed through delta-rs from Arrow, the same way for every engine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import sqlglot
from sqlglot import exp

from warehouse.engines.base import LakeEngine
from warehouse.engines.portable import UNCARRIED, portability_problems
from warehouse.engines.window import TimeWindow, time_window
from warehouse.errors import UserError
from warehouse.lake import layout
from warehouse.lake.delta import LakeTable


@dataclass(frozen=True)
class LakeRefresh:
    """What one refresh of one dynamic table did on the lake."""

    name: str
    mode: str  # 'unchanged' | 'window' | 'full' | 'skipped'
    rows: int
    watermark: int
    reason: str | None
    seconds: float


def refresh_lake(
    engine: LakeEngine, lake: Path, name: str | None = None, *, full: bool = False
) -> list[LakeRefresh]:
    """Refresh every dynamic table recorded in `lake` (or `name`), sources first."""
    definitions = _ordered(layout.read_definitions(lake))
    if name is not None:
        definitions = [d for d in definitions if d.name == name]
        if not definitions:
            raise UserError(f"no dynamic table named {name} in lake {lake}: run wanka export")
    engine.register_lake(lake)
    engine.register_udfs()
    done = []
    for d in definitions:
        done.append(refresh_one(engine, lake, d, full=full))
        if done[-1].mode not in ("unchanged", "skipped"):
            engine.register_lake(lake)  # a table reading this one reads what was just written
    return done


def describe_lake(done: LakeRefresh) -> str:
    """One line for `wanka refresh --engine ...`."""
    line = f"{done.name}: {done.mode}, {done.rows} rows, watermark {done.watermark}"
    line += f", {done.seconds:.2f} s"
    return f"{line} ({done.reason})" if done.reason else line


def _ordered(definitions: list[layout.DynamicDefinition]) -> list[layout.DynamicDefinition]:
    """Sources before the dynamic tables reading them."""
    by_name, done, out = {d.name: d for d in definitions}, set(), []

    def visit(d: layout.DynamicDefinition) -> None:
        if d.name in done:
            return
        done.add(d.name)
        for source in d.sources:
            if source in by_name:
                visit(by_name[source])
        out.append(d)

    for d in definitions:
        visit(d)
    return out


def refresh_one(
    engine: LakeEngine, lake: Path, d: layout.DynamicDefinition, *, full: bool = False
) -> LakeRefresh:
    """Bring dynamic table `d` of the lake up to its sources; see the module docstring."""
    started = time.perf_counter()
    target = LakeTable(layout.table_path(lake, d.name))
    problems = portability_problems(d.query)
    # What reads wanka's own tables (health_findings: the rules' thresholds) has nothing to read
    # in the lake, whatever the engine; the rest runs on DuckDB as written.
    unreadable = [p for p in problems if UNCARRIED in p]
    if unreadable or (problems and engine.capabilities.name != "duckdb"):
        why = f"not portable to {engine.capabilities.name}: {'; '.join(unreadable or problems)}"
        return LakeRefresh(d.name, "skipped", 0, target.watermark(), why, 0.0)
    sources = {s: LakeTable(layout.table_path(lake, s)) for s in d.sources}
    mark = target.watermark()
    high = max([s.watermark() for s in sources.values()] + [0])
    if target.exists and high <= mark and not full:
        return LakeRefresh(d.name, "unchanged", 0, mark, None, time.perf_counter() - started)
    if appends_only(d.query) and len(sources) == 1:
        [(fact_name, facts)] = sources.items()
        reason = _full_reason(target, sources, fact_name, mark, full)
        if reason is None:
            rows = _refresh_append(engine, target, fact_name, facts, d.query, mark, high)
            seconds = time.perf_counter() - started
            return LakeRefresh(d.name, "append", rows, high, None, seconds)
    window = time_window(d.query, _time_series(sources))
    reason = _full_reason(target, sources, window.table if window else None, mark, full)
    if reason is None and window is not None:
        rows = _refresh_window(engine, lake, target, sources[window.table], window, mark, high)
        seconds = time.perf_counter() - started
        return LakeRefresh(d.name, "window", rows, high, None, seconds)
    result = engine.sql(d.query)
    engine.commit(target, result, mode="overwrite", watermark=high, engine=engine.capabilities.name)
    return LakeRefresh(d.name, "full", result.num_rows, high, reason, time.perf_counter() - started)


def _time_series(sources: dict[str, LakeTable]) -> frozenset[str]:
    return frozenset(n for n, t in sources.items() if t.exists and t.partition_columns())


def _full_reason(
    target: LakeTable,
    sources: dict[str, LakeTable],
    growing: str | None,
    mark: int,
    full: bool,
) -> str | None:
    """Why this refresh recomputes the whole table; None when an incremental one is exact.

    `growing` is the one source whose appends the incremental refresh reads (the time series
    of a window, the table of an append); any other change means a full recompute.
    """
    if full:
        return "--full was asked for"
    if not target.exists or mark < 0:
        return "first refresh in the lake"
    if growing is None:
        return "no time bucket of a time series among its groups"
    for name, table in sources.items():
        commits = table.commits_since(mark)
        rewrites = [c for c in commits if c.get("wanka.operation") != "append"]
        if rewrites:
            op = rewrites[0].get("wanka.operation")
            return f"source {name} was changed by {op}, not only appended to"
        if commits and name != growing:
            return f"source {name} (not the time series {growing}) changed"
    return None


def appends_only(query: str) -> bool:
    """A filter/projection of one table: its new rows are the query over the new rows.

    >>> appends_only("SELECT ts, host FROM gpu_metrics WHERE value > 80")
    True
    >>> appends_only("SELECT host, count(*) FROM gpu_metrics GROUP BY host")
    False
    """
    tree = sqlglot.parse_one(query, read="duckdb")
    if not isinstance(tree, exp.Select) or tree.args.get("joins"):
        return False
    blocked = ("group", "having", "limit", "order", "distinct", "qualify", "with")
    if any(tree.args.get(k) for k in blocked):
        return False
    return not any(tree.find(kind) for kind in (exp.AggFunc, exp.Window, exp.Subquery))


def _refresh_append(
    engine: LakeEngine,
    target: LakeTable,
    name: str,
    facts: LakeTable,
    query: str,
    mark: int,
    high: int,
) -> int:
    """The query over the source's files added since `mark`, appended in one commit.

    Only appends reached the source since `mark` (else the refresh is full), and every append
    writes new files, so the files whose largest batch id is above `mark` hold exactly the
    new rows.
    """
    new = [f.uri for f in facts.file_stats() if (f.max_batch_id or -1) > mark]
    engine.register_table(name, facts, files=new)
    try:
        return engine.append(target, query, watermark=high)
    finally:
        engine.register_table(name, facts)


def _refresh_window(
    engine: LakeEngine,
    lake: Path,
    target: LakeTable,
    facts: LakeTable,
    window: TimeWindow,
    mark: int,
    high: int,
) -> int:
    """Recompute the buckets holding rows newer than `mark`; one commit."""
    stats = facts.file_stats()
    new = [f for f in stats if f.max_batch_id is not None and f.max_batch_id > mark]
    lows = [f.min_ts for f in new if f.min_ts is not None]
    highs = [f.max_ts for f in new if f.max_ts is not None]
    if not lows or not highs:  # appends of rows without ts in range: nothing to recompute
        empty = target.schema().empty_table()
        engine.commit(target, empty, mode="append", watermark=high)
        return 0
    lo, hi = window.bounds(min(lows), max(highs))
    # the files of the window's days only: the recompute reads what the new rows touch
    days = {f.day for f in stats if f.day is not None and lo.date() <= f.day <= hi.date()}
    files = [f.uri for f in stats if f.day in days]
    engine.register_table(window.table, facts, files=files)
    try:
        rows = engine.sql(window.restrict(_query_of(lake, target), lo, hi))
    finally:
        engine.register_table(window.table, facts)
    engine.commit(
        target,
        rows.cast(target.schema()) if rows.schema != target.schema() else rows,
        mode="overwrite",
        watermark=high,
        predicate=window.predicate(lo, hi),
        window=[_iso(lo), _iso(hi)],
    )
    return int(rows.num_rows)


def _query_of(lake: Path, target: LakeTable) -> str:
    name = target.path.name
    return next(d.query for d in layout.read_definitions(lake) if d.name == name)


def _iso(moment: datetime) -> str:
    return moment.isoformat()
