"""What the telemetry store is read through: the one relation of samples, its series and its
batch log, and the shape of the `gpu_metrics` view users see.

`gpu_metrics` is a view over `wanka.gpu_series` (one row per distinct label set) and the
samples (series id, ts, value, batch id) of two tiers: `HOT`, where every write lands, and
`BLOCKS`, the compressed blocks of closed windows (sql/schema/0012_compact_telemetry.sql and
0021_telemetry_blocks.sql say why). Every module outside `warehouse.tsdb` that reads samples
below the view (PromQL's source, the dynamic-table DML, the health reads) names them by these
constants and `samples()`, never by the physical tables (tests/warehouse/tsdb/test_seam.py).
"""

from __future__ import annotations

#: The view users read and write: one row per sample, with its series' labels.
VIEW = "gpu_metrics"
#: The table that holds the hot samples (schema, name): for statistics of their size only.
SAMPLES_TABLE = ("wanka", "gpu_samples")
#: The hot tier: (series_id, ts, value, batch_id), one row per sample. Every write lands here;
#: a reader reads `samples()` (or SAMPLES), which adds the cold tier.
HOT = ".".join(SAMPLES_TABLE)
#: The cold tier: one row per block (one metric's series runs of a closed window) with its
#: statistics (sql/schema/0021_telemetry_blocks.sql) and its samples compressed.
BLOCKS = "wanka.gpu_blocks"
#: The series dictionary: (series_id, metric, host, gpu, uuid, model, labels).
SERIES = "wanka.gpu_series"
#: One row per append of samples (batch id, rows, time range): where a refresh finds new batches.
BATCHES = "wanka.sample_batches"
#: The view's columns, in its order, with their types.
COLUMNS = {
    "ts": "TIMESTAMPTZ",
    "host": "VARCHAR",
    "gpu": "INTEGER",
    "uuid": "VARCHAR",
    "model": "VARCHAR",
    "metric": "VARCHAR",
    "value": "DOUBLE",
    "labels": "JSON",
    "batch_id": "BIGINT",
}
#: The columns that name a series (they live in SERIES), in id order.
LABEL_COLUMNS = ("metric", "host", "gpu", "uuid", "model", "labels")
#: The columns of a sample (SAMPLES, beside series_id).
SAMPLE_COLUMNS = ("ts", "value", "batch_id")
#: The columns a sample cannot be without.
REQUIRED = ("ts", "host", "metric")
#: Series r and rows x carry the same label set (NULL-safe): how rows find their series.
SAME_SERIES = " AND ".join(f"r.{c} IS NOT DISTINCT FROM x.{c}" for c in LABEL_COLUMNS)


Bound = str | None


def samples(
    ts: tuple[Bound, Bound] = (None, None),
    batches: tuple[Bound, Bound] = (None, None),
    series: str | None = None,
    metrics: str | None = None,
) -> str:
    """A relation (series_id, ts, value, batch_id) of every sample, hot and cold, as SQL in
    parentheses. Bounds are SQL expressions (inclusive; None: open): only the blocks whose
    statistics meet them are decoded, and only their samples within them come out. `series`, a
    query of one column of series ids, keeps the blocks and samples of those series only, and
    `metrics`, a SQL list of metric names, the blocks of those metrics (the hot samples are left
    to the caller's join).

    >>> "gpu_blocks" in samples(), "wanka_block(data, NULL, NULL" in samples()
    (True, True)
    """
    hot = [
        f"{column} {op} {bound}"
        for column, (lo, hi) in (("ts", ts), ("batch_id", batches))
        for op, bound in ((">=", lo), ("<=", hi))
        if bound is not None
    ]
    return (
        f"(SELECT series_id, ts, value, batch_id FROM {HOT}{_where(hot)}\n"
        f" UNION ALL\n {cold(ts, batches, series, metrics)})"
    )


def cold(
    ts: tuple[Bound, Bound] = (None, None),
    batches: tuple[Bound, Bound] = (None, None),
    series: str | None = None,
    metrics: str | None = None,
) -> str:
    """The SELECT of the cold samples (series_id, ts, value, batch_id) within the bounds, as
    `samples` takes them: the blocks whose statistics meet them, decoded and filtered."""
    found = []
    for (lo, hi), (low, high) in ((ts, ("ts_min", "ts_max")), (batches, ("batch_lo", "batch_hi"))):
        if lo is not None:
            found.append(f"{high} >= {lo}")
        if hi is not None:
            found.append(f"{low} <= {hi}")
    if metrics is not None:
        found.append(f"metric IN ({metrics})")
    wanted = "NULL"
    if series is not None:
        wanted = f"(SELECT list(DISTINCT w::INTEGER) FROM ({series}) AS _w(w) WHERE w > 0)"
        found.append(f"len(list_filter({wanted}, lambda i: i BETWEEN series_lo AND series_hi)) > 0")
    args = ", ".join(
        f"CAST({b} AS {t})" if b is not None else "NULL"
        for b, t in zip((*ts, *batches), ("TIMESTAMPTZ",) * 2 + ("BIGINT",) * 2, strict=True)
    )
    return (
        f"SELECT unnest(wanka_block(data, {args}, {wanted}), recursive := true) "
        f"FROM {BLOCKS}{_where(found)}"
    )


def _where(conditions: list[str]) -> str:
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


#: Every sample, hot and cold (a reader with a time or batch range asks `samples()` for less).
SAMPLES = samples()


def is_view(table: str) -> bool:
    """Whether a table name given to an insert means gpu_metrics.

    >>> is_view("gpu_metrics"), is_view('main."gpu_metrics"'), is_view("nodes")
    (True, True, False)
    """
    return table.replace('"', "").lower() in (VIEW, f"main.{VIEW}")
