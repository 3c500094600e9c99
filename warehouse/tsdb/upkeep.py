"""The store's own upkeep, as a list of named tasks the serve process schedules (each one of
its jobs, with its metrics): retention drops what its rules no longer keep, then the
downsampling tiers fold the batches that arrived since the last pass (`tiers.fold`, which
`wanka refresh` also runs first), then compaction moves the samples of closed windows into
compressed blocks (`compact`). A new kind of upkeep is one more `Task` here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import duckdb

from warehouse.tsdb import compact, retention, tiers

#: What one pass of a task did: (table, rows) for each table it changed rows of.
Done = Sequence[tuple[str, int]]


@dataclass(frozen=True)
class Task:
    """One kind of upkeep: its name (the scheduler's job name) and one pass of it."""

    name: str
    run: Callable[[duckdb.DuckDBPyConnection], Done]


def _drop(cur: duckdb.DuckDBPyConnection) -> Done:
    return [(applied.table, applied.rows) for applied in retention.apply(cur)]


def _fold(cur: duckdb.DuckDBPyConnection) -> Done:
    tiers.fold(cur)
    return []  # the tiers are rebuilt from what is held: no rows of a table change


def _compact(cur: duckdb.DuckDBPyConnection) -> Done:
    moved = compact.compact(cur)
    counts: dict[str, int] = {}
    for done in moved:
        table = done.tier or "gpu_metrics"
        counts[table] = counts.get(table, 0) + done.samples
    return list(counts.items())


#: In the order a pass runs them: retention before the fold, as the fold covers what it keeps;
#: compaction last, so what it moves was folded (the fold would find it in the blocks anyway).
TASKS = (Task("retention", _drop), Task("tiers", _fold), Task("compaction", _compact))
