"""The store's own upkeep, as a list of named tasks the serve process schedules (each one of
its jobs, with its metrics) and `wanka refresh` runs in part: retention drops what its rules no
longer keep, then the downsampling tiers fold the batches that arrived since the last pass
(`tiers.fold`). A new kind of upkeep (compaction of closed windows) is one more `Task` here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from warehouse.tsdb import retention, tiers


@dataclass(frozen=True)
class Task:
    """One kind of upkeep: its name (the scheduler's job name) and one pass of it."""

    name: str
    run: Callable[[duckdb.DuckDBPyConnection], object]


def _drop(cur: duckdb.DuckDBPyConnection) -> list[retention.Applied]:
    return retention.apply(cur)


def _fold(cur: duckdb.DuckDBPyConnection) -> int:
    return tiers.fold(cur)


#: In the order a pass runs them: retention before the fold, as the fold covers what it keeps.
TASKS = (Task("retention", _drop), Task("tiers", _fold))


@dataclass(frozen=True)
class Upkept:
    """What one pass did."""

    dropped: list[retention.Applied]  # per table with a rule: the rows retention dropped
    folded: int  # batches folded into the tiers


def upkeep(cur: duckdb.DuckDBPyConnection, *, drop: bool = True) -> Upkept:
    """One pass of upkeep on `cur`; `drop=False` leaves retention to the scheduler (an
    on-demand refresh folds the tiers only, as it always has)."""
    dropped = _drop(cur) if drop else []
    return Upkept(dropped, _fold(cur))
