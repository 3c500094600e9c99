"""Cutting a closed window's tier blocks again, as one freeze of the whole window would have.

A window's blocks of one tier and metric overlap in series when its rows were frozen more than
once: the scheduler freezes the minute tier's rows of each closed 10 minutes of the open window
(`compact.FLUSH`), as it flushes the samples, and rows a fold thawed to change them are frozen
again later. Overlapping blocks cost bytes (each series' run cut into pieces) and make a reader
of one series decode several blocks. Once the window is closed, `one` decodes its blocks of one
tier and metric, orders their rows by series and bucket, and writes them as `freeze` would
have, in place of the old ones, in one transaction. The rows are those of before (a bucket is
one row, in the table or in a block), so no dynamic table recomputes.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import numpy as np

from warehouse.kernel import blocks
from warehouse.kernel.transactions import transaction
from warehouse.tsdb import tier_blocks

#: (window, metric) pairs of a tier's closed windows with two blocks that share a series range.
_PENDING = f"""
SELECT DISTINCT window_start, metric FROM (
    SELECT window_start, metric, series_lo,
           max(series_hi) OVER (PARTITION BY window_start, metric
                                ORDER BY series_lo, bucket_min, bucket_max, series_hi
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_hi
    FROM {tier_blocks.TABLE} WHERE tier = $tier AND window_start < $before
)
WHERE series_lo <= before_hi
ORDER BY window_start, metric
"""


def pending(
    cur: duckdb.DuckDBPyConnection, tier: str, before: datetime
) -> list[tuple[datetime, str]]:
    """The (window, metric) pairs of tier `tier`'s windows starting before `before` whose
    blocks overlap in series, oldest first."""
    return [(w, m) for w, m in cur.execute(_PENDING, {"tier": tier, "before": before}).fetchall()]


def one(
    cur: duckdb.DuckDBPyConnection, tier: str, window_start: datetime, metric: str, size: int
) -> tuple[int, int, int]:
    """Cut the blocks of one window and metric of tier `tier` again, in one transaction: the
    rows, blocks and bytes written (nothing when it has fewer than two blocks)."""
    which = "tier = $tier AND window_start = $start AND metric = $metric"
    given = {"tier": tier, "start": window_start, "metric": metric}
    with transaction(cur):
        found = [d for (d,) in cur.execute(f"SELECT data FROM {tier_blocks.TABLE} WHERE {which}",
                                           given).fetchall()]  # fmt: skip
        if len(found) < 2:
            return 0, 0, 0
        decoded = [blocks.decode_rows(data) for data in found]
        ids = np.concatenate([found_ids for found_ids, _ in decoded])
        width = len(decoded[0][1])
        columns = []
        for at in range(width):
            values = np.concatenate([cols[at][0] for _, cols in decoded])
            masks = [cols[at][1] for _, cols in decoded]
            mask = None
            if any(m is not None for m in masks):
                mask = np.concatenate(
                    [
                        np.zeros(len(cols[at][0]), dtype=bool) if m is None else m
                        for m, (_, cols) in zip(masks, decoded, strict=True)
                    ]
                )
            columns.append((values, mask))
        order = np.lexsort((columns[0][0], ids))  # by series, then bucket
        ids = ids[order]
        columns = [(v[order], None if m is None else m[order]) for v, m in columns]
        cur.execute(f"DELETE FROM {tier_blocks.TABLE} WHERE {which}", given)
        size_of = tier_blocks.store(cur, tier, window_start, metric, ids, columns, size)
    return len(ids), -(-len(ids) // size), size_of
