"""Thermal residuals persisting for days (sql/faults/thermal_residual.sql): after the hourly
tier folds (before each refresh pass of the serve scheduler, `wanka refresh` and an on-demand
refresh: callers above tsdb, which faults reads), the whole UTC days not yet derived add their
node_signals of kind 'thermal_residual' — a GPU whose temperature stood at least
risk_settings' thermal_residual_c above what its power predicts, for thermal_residual_days
days in a row.

A day is derived once, when the hourly tier holds a later hour (wanka.settings' key
`thermal_residual_through` keeps the first day not yet derived); samples of a day that arrive
after it was derived are not seen until `signals.rebuild`. A first derivation reaches back at
most `FIRST_DAYS` days.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache

import duckdb

from warehouse.kernel import catalog
from warehouse.tsdb import tier_blocks

#: The wanka.settings key of the first day not yet derived.
THROUGH_KEY = "thermal_residual_through"
#: How far back a first derivation reaches, days.
FIRST_DAYS = 35
_TIER = "wanka.gpu_tier_1h"
_METRICS = "'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE'"
_SPAN = f"""
SELECT least((SELECT min(bucket) FROM {_TIER}),
             (SELECT min(bucket_min) FROM wanka.tier_blocks WHERE tier = '{_TIER}')),
       greatest((SELECT max(bucket) FROM {_TIER}),
                (SELECT max(bucket_max) FROM wanka.tier_blocks WHERE tier = '{_TIER}'))
"""


@cache
def _insert_sql() -> str:
    text = (catalog.sql_dir() / "faults" / "thermal_residual.sql").read_text(encoding="utf-8")
    # the tier's rows from the first hour a run may need to the end of the days derived
    hours = tier_blocks.rows(_TIER, "$lo - to_days(CAST($days AS INTEGER) - 1)", "$hi", _METRICS)
    return text.replace("{hours}", hours)


def _day(ts: datetime) -> datetime:
    return ts.replace(hour=0, minute=0, second=0, microsecond=0)


def derive(cur: duckdb.DuckDBPyConnection, *, again: bool = False) -> int:
    """Add the evidence of the whole days the hourly tier holds that were not derived yet
    (`again`: from the first day, as `signals.rebuild` does); the rows added."""
    settings = dict(
        cur.execute(
            "SELECT name, value FROM risk_settings "
            "WHERE name IN ('thermal_residual_c', 'thermal_residual_days')"
        ).fetchall()
    )
    span = cur.execute(_SPAN).fetchone()
    if len(settings) < 2 or span is None or span[0] is None:
        return 0
    first, newest = span[0].astimezone(UTC), span[1].astimezone(UTC)
    hi = _day(newest)  # the newest day is not whole yet
    said = cur.execute("SELECT value FROM wanka.settings WHERE key = ?", [THROUGH_KEY]).fetchone()
    if said is not None and said[0] and not again:
        lo = datetime.fromisoformat(said[0])
    else:
        lo = max(_day(first), hi - timedelta(days=FIRST_DAYS))
    if lo >= hi:
        return 0
    [(batch_id,)] = cur.execute("SELECT nextval('wanka.batch_seq')").fetchall()
    [(before,)] = cur.execute("SELECT count(*) FROM node_signals").fetchall()
    cur.execute(
        _insert_sql(),
        {
            "lo": lo,
            "hi": hi,
            "days": settings["thermal_residual_days"],
            "threshold_c": settings["thermal_residual_c"],
            "batch_id": batch_id,
        },
    )
    cur.execute(
        "INSERT OR REPLACE INTO wanka.settings VALUES (?, ?, now())", [THROUGH_KEY, hi.isoformat()]
    )
    [(after,)] = cur.execute("SELECT count(*) FROM node_signals").fetchall()
    return int(after - before)
