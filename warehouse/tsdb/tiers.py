"""The downsampling tiers of telemetry, folded from the samples on the scheduler.

`wanka.gpu_tier_1m` and `wanka.gpu_tier_1h` hold, per series and bucket, the exact partial
states of its samples with a value (sql/schema/0013_telemetry_tiers.sql says what each column
is, and why a bucket of one sample stores only its sum). Writers only append: an insert adds
samples; an UPDATE or DELETE of gpu_metrics also appends the series and times it touched to
`wanka.tier_dirty` (`mark`). `fold`, one transaction, run before every scheduler pass, before
retention drops anything, and by `wanka refresh`:

1. the samples of batches past the tiers' watermark (`wanka.tier_state`), grouped by series and
   bucket, are MERGEd into the tiers — counts and sums add, min and max combine, the last value
   is the one with the later time (of equal times, the larger value);
2. the buckets of the dirty keys are rebuilt from the samples, except buckets that begin before
   what retention still holds whole: their raw samples are partly gone, and what the tier holds
   for them is all that is left.

So no writer's transaction updates a tier row (two transactions updating one bucket would
conflict), and the tiers lag the samples by one fold: at most a minute in `wanka serve`
(`upkeep.TIERS_EVERY_S`).

The minute tier keeps only minutes of two samples or more (at 60 s scrapes a minute of one sample
would be that sample again): its fold rebuilds the minutes the new samples touch from the
samples held, and `gpu_metrics_1m` reads a minute of one sample from the samples
(`single_samples`); retention puts such minutes into the tier as it drops their samples
(`keep_single_minutes`). Rows of closed windows are compacted into blocks
(`warehouse.tsdb.tier_blocks`); a fold that must change a compacted bucket thaws its block first.

`RECOMPUTE` is each tier's rows as a query over gpu_metrics, for tests and benchmarks.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from warehouse.kernel.transactions import transaction
from warehouse.tsdb import tier_blocks
from warehouse.tsdb.relations import BATCHES, BLOCKS, HOT, LABEL_COLUMNS, SERIES, samples

#: Each tier's table and bucket width.
TIERS = {"wanka.gpu_tier_1m": "1 minute", "wanka.gpu_tier_1h": "1 hour"}
#: The tier that keeps only buckets of two samples or more: a minute of one sample (every
#: minute, at 60 s scrapes) is that sample, read from the raw samples (`single_samples`).
MINUTES = "wanka.gpu_tier_1m"
#: A tier row's columns, in their table's order.
COLUMNS = (
    "series_id",
    "bucket",
    "samples",
    "value_sum",
    "value_min",
    "value_max",
    "value_last",
    "last_ts",
)


def _rows(width: str, source: str, having: str = "") -> str:
    """Tier rows of the samples of `source` (series_id, ts, value) at bucket `width`."""
    several = "CASE WHEN count(*) > 1 THEN {} END"
    return (
        f"SELECT series_id, time_bucket(INTERVAL '{width}', ts) AS bucket, "
        "count(*)::INTEGER AS samples, sum(value) AS value_sum, "
        f"{several.format('min(value)')} AS value_min, "
        f"{several.format('max(value)')} AS value_max, "
        f"{several.format('arg_max(value, (ts, value))')} AS value_last, max(ts) AS last_ts "
        f"FROM {source} WHERE value IS NOT NULL GROUP BY 1, 2{having}"
    )


#: What a bucket must hold to be kept in a tier's table.
_KEPT = {MINUTES: " HAVING count(*) > 1"}


def single_samples(tier_rows: str, raw: str) -> str:
    """The minutes of one sample as rows of the minute tier: the folded samples of `raw`
    (series_id, ts, value, batch_id) with a value whose minute has no row in `tier_rows` (the
    tier's rows, in its table and its blocks)."""
    return (
        "SELECT s.series_id, s.bucket, 1 AS samples, s.value AS value_sum, "
        "NULL::DOUBLE AS value_min, NULL::DOUBLE AS value_max, NULL::DOUBLE AS value_last, "
        "s.ts AS last_ts FROM (SELECT series_id, time_bucket(INTERVAL '1 minute', ts) AS bucket, "
        f"ts, value FROM {raw} WHERE value IS NOT NULL "
        "AND batch_id <= (SELECT watermark FROM wanka.tier_state)) AS s "
        f"ANTI JOIN {tier_rows} AS k ON k.series_id = s.series_id AND k.bucket = s.bucket"
    )


def _merge(table: str, width: str, source: str) -> str:
    def full(side: str, name: str) -> str:  # NULL min/max/last: a bucket of one sample
        return f"coalesce({side}.{name}, {side}.value_sum)"

    later = (
        f"d.last_ts > t.last_ts OR (d.last_ts = t.last_ts "
        f"AND {full('d', 'value_last')} > {full('t', 'value_last')})"
    )
    sets = ", ".join(
        [
            "samples = t.samples + d.samples",
            "value_sum = t.value_sum + d.value_sum",
            f"value_min = least({full('t', 'value_min')}, {full('d', 'value_min')})",
            f"value_max = greatest({full('t', 'value_max')}, {full('d', 'value_max')})",
            f"value_last = CASE WHEN {later} THEN {full('d', 'value_last')} "
            f"ELSE {full('t', 'value_last')} END",
            "last_ts = greatest(t.last_ts, d.last_ts)",
        ]
    )
    return (
        f"MERGE INTO {table} AS t USING ({_rows(width, source)} ORDER BY 2, 1) AS d "
        "ON t.series_id = d.series_id AND t.bucket = d.bucket "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(COLUMNS)}) "
        f"VALUES ({', '.join('d.' + c for c in COLUMNS)})"
    )


def fold(cur: duckdb.DuckDBPyConnection) -> int:
    """Bring the tiers up to the newest samples, in one transaction; the batches folded."""
    with transaction(cur):
        return _fold(cur)


def _fold(cur: duckdb.DuckDBPyConnection) -> int:
    """Merge the new batches, rebuild the dirty buckets; the batches folded."""
    [(low, high)] = cur.execute(
        f"SELECT (SELECT watermark FROM wanka.tier_state), (SELECT max(batch_id) FROM {BATCHES})"
    ).fetchall()
    window = {"lo": low, "hi": high}
    if high is not None and high > low:
        _merge_twins(cur, window)
    [(dirty,)] = cur.execute("SELECT EXISTS (SELECT 1 FROM wanka.tier_dirty)").fetchall()
    if high is None or high <= low:
        if dirty:
            _recompute(cur)
        return 0
    new = f"(SELECT {{}}(ts_{{}}) FROM {BATCHES} WHERE batch_id > $lo AND batch_id <= $hi)"
    for table, width in TIERS.items():  # compacted buckets the new batches fall in: back first
        lo = f"time_bucket(INTERVAL '{width}', {new.format('min', 'min')})"
        tier_blocks.thaw(cur, table, lo, new.format("max", "max"), params=window)
    source = f"(SELECT series_id, ts, value FROM {samples(batches=('$lo + 1', '$hi'))})"
    held = _held(cur)
    for table, width in TIERS.items():
        if table == MINUTES:
            _fold_minutes(cur, source, window, held)
        else:
            cur.execute(_merge(table, width, source), window)
    if dirty:
        _recompute(cur)
    cur.execute("UPDATE wanka.tier_state SET watermark = ?", [high])
    [(folded,)] = cur.execute(
        f"SELECT count(*) FROM {BATCHES} WHERE batch_id > $lo AND batch_id <= $hi",
        window,
    ).fetchall()
    return int(folded)


def keep_single_minutes(cur: duckdb.DuckDBPyConnection, lo: datetime, hi: datetime) -> int:
    """Before retention drops the samples of [lo, hi): put their minutes of one sample (read
    from the samples so far) into the minute tier, which keeps what raw retention drops; the
    rows it added. In the caller's transaction."""
    first, last = "CAST($lo AS TIMESTAMPTZ)", "CAST($hi AS TIMESTAMPTZ)"
    tier = tier_blocks.rows(MINUTES, f"time_bucket(INTERVAL '1 minute', {first})", last)
    raw = samples(ts=(first, last))
    found = cur.execute(
        f"INSERT INTO {MINUTES} SELECT * FROM ({single_samples(tier, raw)}) WHERE last_ts < $hi",
        {"lo": lo, "hi": hi},
    ).fetchall()
    return int(found[0][0]) if found else 0


def _fold_minutes(
    cur: duckdb.DuckDBPyConnection, source: str, window: dict[str, int], held: datetime | None
) -> None:
    """Rebuild the minutes the new samples (`source`) fall in from the samples held, keeping
    those of two samples or more. A minute retention no longer holds whole takes the new
    samples as a merge into what the tier has (its raw samples are partly gone)."""
    minute = "time_bucket(INTERVAL '1 minute', ts)"
    touched = "_wanka_tier_minutes"
    cur.execute(
        f"CREATE OR REPLACE TEMP TABLE {touched} AS SELECT DISTINCT series_id, {minute} AS bucket "
        f"FROM {source} WHERE value IS NOT NULL",
        window,
    )
    try:
        edge = {} if held is None else {"held": _ceil(cur, held, "1 minute")}
        whole = "TRUE" if held is None else "k.bucket >= $held"
        if held is not None:
            older = (
                f"(SELECT x.* FROM {source} x JOIN {touched} k ON k.series_id = x.series_id "
                f"AND k.bucket = time_bucket(INTERVAL '1 minute', x.ts) WHERE k.bucket < $held)"
            )
            cur.execute(_merge(MINUTES, "1 minute", older), {**window, **edge})
        cur.execute(
            f"DELETE FROM {MINUTES} AS t USING {touched} AS k "
            f"WHERE t.series_id = k.series_id AND t.bucket = k.bucket AND {whole}",
            edge,
        )
        # the range as values, not subqueries: DuckDB prunes the hot samples' row groups by it
        [(first, last)] = cur.execute(
            f"SELECT min(bucket), max(bucket) + INTERVAL 1 MINUTE FROM {touched}"
        ).fetchall()
        if first is None:
            return
        edge |= {"first": first, "last": last}
        raw = samples(ts=("$first", "$last"), series=f"SELECT series_id FROM {touched}")
        rows = (
            f"(SELECT s.series_id, s.ts, s.value FROM {raw} s JOIN {touched} AS k "
            f"ON k.series_id = s.series_id AND k.bucket = time_bucket(INTERVAL '1 minute', s.ts) "
            f"WHERE {whole})"
        )
        cur.execute(
            f"INSERT INTO {MINUTES} {_rows('1 minute', rows, _KEPT[MINUTES])} ORDER BY 2, 1", edge
        )
    finally:
        cur.execute(f"DROP TABLE IF EXISTS {touched}")


def _merge_twins(cur: duckdb.DuckDBPyConnection, window: dict[str, int]) -> None:
    """Two transactions that first wrote one label set at once each added a series for it
    (neither saw the other's). Move the later twins' samples to the first, rebuild the tier
    buckets they were in, and drop the twins.

    A twin has samples in the batch that added it, so the label sets looked at are those of
    the series of the batches this fold takes (`window`), each matched against the whole
    dictionary: two passes over it, where grouping all of it by its labels cost a sort of
    every series (18.75M after a month of 10,000 GPUs' jobs) on every fold."""
    same = " AND ".join(f"s.{c} IS NOT DISTINCT FROM n.{c}" for c in LABEL_COLUMNS)
    new = samples(batches=("$lo + 1", "$hi"))
    twins = (
        f"WITH n AS MATERIALIZED (SELECT r.* FROM {SERIES} r WHERE r.series_id IN "
        f"(SELECT DISTINCT series_id FROM {new})), "
        f"m AS (SELECT n.series_id AS seen, s.series_id FROM n JOIN {SERIES} s ON {same}), "
        "f AS (SELECT seen, min(series_id) AS first FROM m GROUP BY seen HAVING count(*) > 1) "
        "SELECT DISTINCT m.series_id AS twin, f.first FROM m JOIN f USING (seen) "
        "WHERE m.series_id <> f.first"
    )
    found = cur.execute(twins, window).fetchall()
    # a twin whose samples are in compressed blocks already keeps its series (rare: they are
    # merged on the pass after they appear, and compacted hours later)
    found = [(twin, first) for twin, first in found if not _in_blocks(cur, twin)]
    if not found:
        return
    pairs = (
        "(VALUES "
        + ", ".join(f"({twin}, {first})" for twin, first in found)
        + ") AS p(twin, first)"
    )
    cur.execute(
        f"INSERT INTO wanka.tier_dirty SELECT p.first, s.ts FROM {HOT} s "
        f"JOIN {pairs} ON s.series_id = p.twin"
    )
    twin_ids = "SELECT twin FROM " + pairs
    for table in TIERS:
        tier_blocks.thaw(
            cur, table, "'-infinity'::TIMESTAMPTZ", "'infinity'::TIMESTAMPTZ", twin_ids
        )
        cur.execute(f"DELETE FROM {table} t USING {pairs} WHERE t.series_id = p.twin")
    cur.execute(f"UPDATE {HOT} s SET series_id = p.first FROM {pairs} WHERE s.series_id = p.twin")
    cur.execute(f"DELETE FROM {SERIES} s USING {pairs} WHERE s.series_id = p.twin")


def _in_blocks(cur: duckdb.DuckDBPyConnection, series_id: int) -> bool:
    return bool(
        cur.execute(
            f"SELECT count(*) FROM {BLOCKS} WHERE ? BETWEEN series_lo AND series_hi", [series_id]
        ).fetchall()[0][0]
    )


def mark(cur: duckdb.DuckDBPyConnection, keys: str, params: object = None) -> None:
    """Note the series and times of samples an UPDATE or DELETE touches (`keys`, a query of
    series_id and ts, run before the statement), for the next fold to rebuild."""
    cur.execute(f"INSERT INTO wanka.tier_dirty {keys}", params or None)


def _recompute(cur: duckdb.DuckDBPyConnection) -> None:
    """Rebuild the tier buckets of the dirty keys from the samples (those retention holds
    whole), after the new batches were merged, then forget the keys."""
    held = _held(cur)
    dirty_samples = samples(
        ts=(
            "(SELECT min(ts) - INTERVAL 1 HOUR FROM wanka.tier_dirty)",
            "(SELECT max(ts) + INTERVAL 1 HOUR FROM wanka.tier_dirty)",
        ),
        series="SELECT series_id FROM wanka.tier_dirty",
    )
    for table, width in TIERS.items():
        tier_blocks.thaw(
            cur,
            table,
            f"(SELECT time_bucket(INTERVAL '{width}', min(ts)) FROM wanka.tier_dirty)",
            "(SELECT max(ts) FROM wanka.tier_dirty)",
            "SELECT series_id FROM wanka.tier_dirty",
        )
        bucket = f"time_bucket(INTERVAL '{width}', ts)"
        touched = f"(SELECT DISTINCT series_id, {bucket} AS bucket FROM wanka.tier_dirty)"
        whole = "TRUE" if held is None else "k.bucket >= $held"
        values = {} if held is None else {"held": _ceil(cur, held, width)}
        cur.execute(
            f"DELETE FROM {table} AS t USING {touched} AS k "
            f"WHERE t.series_id = k.series_id AND t.bucket = k.bucket AND {whole}",
            values,
        )
        samples_ = (
            f"(SELECT s.series_id, s.ts, s.value FROM {dirty_samples} s "
            f"JOIN {touched} AS k ON k.series_id = s.series_id "
            f"AND s.ts >= k.bucket AND s.ts < k.bucket + INTERVAL '{width}' WHERE {whole})"
        )
        kept = _KEPT.get(table, "")
        cur.execute(f"INSERT INTO {table} {_rows(width, samples_, kept)} ORDER BY 2, 1", values)
    cur.execute("DELETE FROM wanka.tier_dirty")


def clear(cur: duckdb.DuckDBPyConnection) -> None:
    """Empty every tier, its blocks too (with the samples and series)."""
    for table in TIERS:
        cur.execute(f"DELETE FROM {table}")
    cur.execute(f"DELETE FROM {tier_blocks.TABLE}")
    cur.execute("DELETE FROM wanka.tier_dirty")


def _held(cur: duckdb.DuckDBPyConnection) -> datetime | None:
    """retention.held_from for gpu_metrics (retention imports this module's importer)."""
    found = cur.execute(
        "SELECT held_from FROM wanka.retention WHERE table_name = 'gpu_metrics'"
    ).fetchall()
    return found[0][0] if found else None


def _ceil(cur: duckdb.DuckDBPyConnection, moment: datetime, width: str) -> datetime:
    """The first bucket of `width` that begins at or after `moment`."""
    [(start,)] = cur.execute(
        f"SELECT CASE WHEN time_bucket(INTERVAL '{width}', $m) = $m THEN $m "
        f"ELSE time_bucket(INTERVAL '{width}', $m) + INTERVAL '{width}' END",
        {"m": moment},
    ).fetchall()
    return start  # type: ignore[no-any-return]


#: Each tier's rows as a query over gpu_metrics (the views' columns), for checks.
RECOMPUTE = {
    view: (
        f"SELECT time_bucket(INTERVAL '{width}', ts) AS bucket, metric, host, gpu, uuid, model, "
        "labels, count(*)::INTEGER AS samples, sum(value) AS value_sum, min(value) AS value_min, "
        "max(value) AS value_max, arg_max(value, (ts, value)) AS value_last, max(ts) AS last_ts "
        "FROM gpu_metrics WHERE value IS NOT NULL GROUP BY ALL"
    )
    for view, width in (("gpu_metrics_1m", "1 minute"), ("gpu_metrics_1h", "1 hour"))
}
