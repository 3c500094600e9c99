"""What the telemetry store is read through: the one relation of samples, its series and its
batch log, and the shape of the `gpu_metrics` view users see.

`gpu_metrics` is a view over `wanka.gpu_series` (one row per distinct label set) and
`wanka.gpu_samples` (series id, ts, value, batch id); sql/schema/0012_compact_telemetry.sql says
why. Every module outside `warehouse.tsdb` that reads samples below the view (PromQL's source,
the dynamic-table DML, the health reads) names them by these constants, never by the physical
tables (tests/warehouse/tsdb/test_seam.py checks): when samples of closed windows move into
compressed blocks, `SAMPLES` becomes the relation that unites both and no reader changes.
"""

from __future__ import annotations

#: The view users read and write: one row per sample, with its series' labels.
VIEW = "gpu_metrics"
#: The table that holds the samples (schema, name): for statistics of their size only.
SAMPLES_TABLE = ("wanka", "gpu_samples")
#: The samples: (series_id, ts, value, batch_id), one row per sample.
SAMPLES = ".".join(SAMPLES_TABLE)
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


def is_view(table: str) -> bool:
    """Whether a table name given to an insert means gpu_metrics.

    >>> is_view("gpu_metrics"), is_view('main."gpu_metrics"'), is_view("nodes")
    (True, True, False)
    """
    return table.replace('"', "").lower() in (VIEW, f"main.{VIEW}")
