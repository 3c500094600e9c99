"""The store's own upkeep, run on the serve process's schedule (and by `wanka refresh`):
retention drops what its rules no longer keep, then the downsampling tiers fold the batches
that arrived since the last pass (`tiers.fold`). Compaction of closed windows joins here."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from warehouse.tsdb import retention, tiers


@dataclass(frozen=True)
class Upkept:
    """What one pass did."""

    dropped: list[retention.Applied]  # per table with a rule: the rows retention dropped
    folded: int  # batches folded into the tiers


def upkeep(cur: duckdb.DuckDBPyConnection, *, drop: bool = True) -> Upkept:
    """One pass of upkeep on `cur`; `drop=False` leaves retention for the scheduler (an
    on-demand refresh folds the tiers only, as it always has)."""
    dropped = retention.apply(cur) if drop else []
    return Upkept(dropped, tiers.fold(cur))
