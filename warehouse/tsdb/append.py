"""The one way samples go into the telemetry store, and what follows from them.

`append` takes samples with their labels, either as gpu_metrics-shaped Arrow rows (ingest, the
simulator, the DML rewrite) or as labelled series and samples (`dedupe.Labelled`: remote_write
and scrape rounds), and stores them under one batch id:

- plainly (`write`: every row becomes a sample), or with `exactly_once` (`dedupe`: a sample
  whose series and timestamp are stored already is not stored again, so a retried delivery is
  stored once). Labelled rows are always stored exactly once; Arrow rows are made labelled
  first when asked for it.
- then the derivations, once per batch and in the same transaction: the job labels of the new
  series and samples (`job_labels`) and the GPU events they show (`events`).

An ingest writes one batch in several parts (a file's chunks): it opens an `Appender`, adds each
part, and the derivations run once when the appender closes, over the whole batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeAlias

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.kernel.transactions import transaction
from warehouse.tsdb import dedupe, events, job_labels, write
from warehouse.tsdb.codes import series_codes
from warehouse.tsdb.relations import LABEL_COLUMNS, SERIES

Rows: TypeAlias = pa.Table | pa.RecordBatchReader | dedupe.Labelled
Then: TypeAlias = Callable[[duckdb.DuckDBPyConnection, int], None]


@dataclass(frozen=True)
class Appended:
    """What one append stored."""

    batch_id: int | None  # None: Arrow rows that named their own batches
    gpu: int  # new gpu_metrics samples
    other: int = 0  # new prom_samples rows (labelled rows of other series)
    stale: int = 0  # new staleness markers
    duplicates: int = 0  # samples already stored (or given twice), not stored again


def append(
    cur: duckdb.DuckDBPyConnection,
    rows: Rows,
    *,
    exactly_once: bool = False,
    batch_id: int | None = None,
    then: Then | None = None,
    cache: dedupe.IdCache | None = None,
) -> Appended:
    """Store `rows` and their derivations; what was new. Labelled rows, and Arrow rows with
    `exactly_once`, are one transaction of their own; plain Arrow rows are stored in the
    caller's (an ingest holds one for its whole file), as any other write of its is.

    `batch_id`: the batch to store under (default: a new one; Arrow rows with a batch_id
    column keep theirs). `then(cur, batch_id)` runs in the same transaction before it commits
    (a scrape round records its targets' health there). `cache` learns, once the transaction
    committed, the series ids of the labelled series it resolved.
    """
    if isinstance(rows, pa.Table | pa.RecordBatchReader) and not exactly_once:
        out = Appender(cur, batch_id)
        with out:
            gpu = out.add(rows)
        if then is not None and out.batch_id is not None:
            then(cur, out.batch_id)
        return Appended(out.batch_id, gpu)
    labelled = rows if not isinstance(rows, pa.Table | pa.RecordBatchReader) else _labelled(rows)
    with transaction(cur):
        batch = batch_id if batch_id is not None else write.next_batch(cur)
        stored = dedupe.store(cur, labelled, batch, cache)
        if stored.gpu:
            derive(cur, (batch,), stored.known_series, stored.series)
        if stored.series is not None:
            cur.execute(f"DROP TABLE IF EXISTS {stored.series}")
        if then is not None:
            then(cur, batch)
    if cache is not None and labelled.keys is not None and stored.resolved:
        keys = labelled.keys
        cache.remember([(keys[sid], series_id) for sid, series_id in stored.resolved])
    return Appended(batch, stored.gpu, stored.other, stored.stale, stored.duplicates)


class Appender:
    """Several parts of Arrow rows appended as one batch; the derivations run once, on close
    (not when the block raised). The caller holds the transaction."""

    def __init__(self, cur: duckdb.DuckDBPyConnection, batch_id: int | None = None) -> None:
        self.cur = cur
        self.batch_id = batch_id
        self.rows = 0
        self._batches: set[int] = set()
        self._known: int | None = None

    def add(self, rows: pa.Table | pa.RecordBatchReader) -> int:
        """Append gpu_metrics rows (columns matched by name); the samples written."""
        if self.batch_id is None and "batch_id" not in rows.schema.names:
            self.batch_id = write.next_batch(self.cur)
        written = write.insert(self.cur, rows, self.batch_id)
        if written.rows:
            if self._known is None:
                self._known = written.known_series
            self._batches.update(written.batches)
            self.rows += written.rows
        return written.rows

    def __enter__(self) -> Appender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is None:
            self.finish()

    def finish(self) -> None:
        """Run the derivations of what was added (once: a second call does nothing)."""
        if self._batches:
            derive(self.cur, tuple(sorted(self._batches)), self._known or 0)
            self._batches.clear()


def append_from(cur: duckdb.DuckDBPyConnection, relation: str, names: set[str]) -> int:
    """Append the rows of `relation` (a table, view or registered Arrow name whose columns
    `names` are gpu_metrics columns) and their derivations; the samples written. The DML
    rewrite's INSERT INTO gpu_metrics, in the statement's transaction."""
    written = write.insert_from(cur, relation, names)
    derive(cur, written.batches, written.known_series)
    return written.rows


def derive(
    cur: duckdb.DuckDBPyConnection,
    batches: tuple[int, ...],
    known_series: int,
    series: str | None = None,
) -> None:
    """What follows from stored samples, once per batch: the 'labels' rows of GPUs first seen
    (series past `known_series`), the job label stretches, and the GPU events (`series`: a
    table of the batches' series, where the caller has one; else the dictionary is read)."""
    job_labels.note_gpus(cur, known_series)
    job_labels.note_labels(cur, ", ".join(str(b) for b in batches))
    events.note(cur, list(batches), series or SERIES)


def _labelled(rows: pa.Table | pa.RecordBatchReader) -> dedupe.Labelled:
    """gpu_metrics Arrow rows as labelled series and samples (each distinct label set one
    series), for the deduplicating path."""
    table = rows.read_all() if isinstance(rows, pa.RecordBatchReader) else rows
    present = [c for c in LABEL_COLUMNS if c in table.schema.names]
    codes, first = series_codes(table, present)
    series = pa.table({"sid": np.arange(len(first), dtype=np.int64)})
    for name in LABEL_COLUMNS:
        column = table[name].take(first) if name in present else pa.nulls(len(first))
        series = series.append_column(name, column)
    series = series.append_column("dcgm", pa.array([True] * len(first)))
    series = series.append_column("all_labels", pa.nulls(len(first), pa.string()))
    series = series.append_column("series_id", pa.nulls(len(first), pa.int64()))
    samples = pa.table(
        {"sid": pa.array(codes, pa.int64()), "ts": table["ts"], "value": table["value"]}
    )
    stale = pa.table({"sid": pa.array([], pa.int64()), "ts": table["ts"].slice(0, 0)})
    return _Arrow(series, samples, stale, table.num_rows)


@dataclass
class _Arrow:
    series: pa.Table
    samples: pa.Table
    stale: pa.Table
    received: int
    requests: int = 1
    keys: Sequence[Any] | None = None
