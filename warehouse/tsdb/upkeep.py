"""The store's own upkeep, as a list of named tasks the serve process schedules (each one of
its jobs, with its metrics): retention drops what its rules no longer keep, then the
downsampling tiers fold the batches that arrived since the last pass (`tiers.fold`, which
`wanka refresh` also runs first), then compaction moves the samples of closed windows into
compressed blocks (`compact`), with each closed 10 minutes of the open window flushed and the
blocks of closed windows cut again (`compact.FLUSH`). A new kind of upkeep is one more `Task`
here. Each task takes the write gate by `turn`, around each of its transactions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import duckdb

from warehouse.kernel.transactions import Turn
from warehouse.tsdb import compact, retention, tiers

#: What one pass of a task did: (table, rows) for each table it changed rows of.
Done = Sequence[tuple[str, int]]


@dataclass(frozen=True)
class Task:
    """One kind of upkeep: its name (the scheduler's job name) and one pass of it."""

    name: str
    run: Callable[[duckdb.DuckDBPyConnection, Turn], Done]
    #: The least time between two passes (0: every pass of the scheduler).
    every_s: float = 0.0


def _drop(cur: duckdb.DuckDBPyConnection, turn: Turn) -> Done:
    return [(applied.table, applied.rows) for applied in retention.apply(cur, turn=turn)]


def _fold(cur: duckdb.DuckDBPyConnection, turn: Turn) -> Done:
    with turn():
        tiers.fold(cur)
    return []  # the tiers are rebuilt from what is held: no rows of a table change


def _compact(cur: duckdb.DuckDBPyConnection, turn: Turn) -> Done:
    moved = compact.compact(cur, turn=turn, budget_s=COMPACT_BUDGET_S, flush=compact.FLUSH)
    counts: dict[str, int] = {}
    for done in moved:
        if done.merged:
            continue  # blocks cut again: no sample moved
        table = done.tier or "gpu_metrics"
        counts[table] = counts.get(table, 0) + done.samples
    return list(counts.items())


#: How often the tiers fold at most. A fold MERGEs the new samples into every bucket they
#: touch: at 10,000 GPUs every 15 s, a fold every 10 s updated ~265,000 hour rows and as many
#: minute rows each time, and held the write gate 11 % of the time on 2 cores (bench_soak); once
#: a minute, each minute bucket is written once and each hour bucket a sixth as often. So the
#: tiers' views lag the samples by up to a minute; `wanka refresh` and retention fold first.
TIERS_EVERY_S = 60.0
#: Seconds of compaction a pass starts at most: a closed 2 h window of 10,000 GPUs every 15 s is
#: ~40 transactions of ~3 s; done in one pass, the refreshes after it would wait two minutes.
COMPACT_BUDGET_S = 5.0
#: In the order a pass runs them: retention before the fold, as the fold covers what it keeps;
#: compaction last, so what it moves was folded (the fold would find it in the blocks anyway).
TASKS = (
    Task("retention", _drop),
    Task("tiers", _fold, every_s=TIERS_EVERY_S),
    Task("compaction", _compact),
)
