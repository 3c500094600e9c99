"""The writes clients ask for: ingest uploads, Prometheus remote_write and refreshes on request,
each through the write gate (`writes.py`) and counted in /metrics.

remote_write requests are decoded and checked on their own threads, then stored together by
the group commit (`remote_write.py`), built on the first request with the cache of label sets
seen (a first batch of requests arrives at once, one per shard of the sender).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, BinaryIO

import pyarrow.compute as pc

from service.serve.auth import require
from service.serve.core import Core, Cursor
from service.serve.metric_families import (
    INGEST_REJECTS,
    INGEST_ROWS,
    REMOTE_WRITE_COMMITS,
    REMOTE_WRITE_COMMITTED,
    REMOTE_WRITE_LAG,
    REMOTE_WRITE_NOT_STORED,
    REMOTE_WRITE_SAMPLES,
)
from service.serve.metrics import Gauges
from service.serve.remote_write import GroupCommit
from service.serve.settings import ServeSettings
from service.serve.writes import WriterBusy
from warehouse.security.users import User

if TYPE_CHECKING:
    from warehouse.dynamic.schedule import Outcome
    from warehouse.ingest import IngestResult, ReadOptions
    from warehouse.remote_write.rows import Decoded, SeriesCache
    from warehouse.tsdb.append import Appended


class Writer:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._series: SeriesCache | None = None  # remote_write's label sets seen
        self._group_commit: GroupCommit | None = None  # remote_write's writer thread
        self.lag_s: float | None = None  # newest sample's age when its batch committed
        self._setup = threading.Lock()

    def start(self) -> None:
        """Nothing until the first remote_write: the group commit starts its thread then."""

    def stop(self) -> None:
        """Refuse new remote_writes; those queued are still stored and answered."""
        if self._group_commit is not None:
            self._group_commit.close()

    def gauges(self) -> Gauges:
        """The remote_write lag for /metrics (once a batch was stored)."""
        return {} if self.lag_s is None else {REMOTE_WRITE_LAG: {(): self.lag_s}}

    def apply(self, settings: ServeSettings) -> None:
        """New limits (`Core.limits`) bound the waits of the writes that start after them."""

    def ingest(
        self,
        user: User,
        fmt: str,
        uploads: list[tuple[str, BinaryIO]],
        options: ReadOptions,
        *,
        force: bool = False,
    ) -> list[IngestResult]:
        """Ingest uploaded streams (name, file) as the CLI would: one batch per stream."""
        from warehouse.ingest import ingest_stream

        require(user, "writer", "ingest")
        core = self._core
        results = []
        for name, stream in uploads:
            # an ingest may take minutes: it waits for another writer as long as it could run
            with core.writes.hold(stream, core.limits.timeout_s * 10, "ingest"):
                result = ingest_stream(core.engine, fmt, stream, name, options, force=force)
            for table, rows in result.rows.items():
                core.metrics.count(INGEST_ROWS, rows, format=fmt, table=table)
            core.metrics.count(INGEST_REJECTS, result.rejected, format=fmt)
            results.append(result)
        return results

    def remote_write(self, user: User, body: bytes, sender: Hashable | None = None) -> Appended:
        """Store one Prometheus remote_write body (warehouse/remote_write): decoded and checked
        here, then stored with the requests queued beside it in one transaction through the
        write gate (serve/remote_write.py); what that transaction stored. `sender`: the
        connection it came on, if known (the group commit's linger ends on it)."""
        from warehouse.ingest.batch import read_context
        from warehouse.ingest.models import ModelNames
        from warehouse.remote_write import decode, rows

        require(user, "writer", "remote_write")
        with self._setup:  # the first requests arrive together (one per shard)
            if self._series is None:
                names = ModelNames(read_context(self._core.engine).model_names)
                self._series = rows.SeriesCache(names)
            if self._group_commit is None:
                self._group_commit = GroupCommit(self._store_remote_write, self._committed)
            series, group_commit = self._series, self._group_commit
        decoded = decode.decode(body, series, rows.Limits())
        wait_s = self._core.limits.timeout_s * 3
        try:
            stored: Appended = group_commit.submit(decoded, sender).result(timeout=wait_s)
        except TimeoutError:
            raise WriterBusy(f"the remote_write was not stored within {wait_s:g} s") from None
        return stored

    def _committed(self, requests: int) -> None:
        """Count one remote_write transaction and the requests it stored."""
        self._core.metrics.count(REMOTE_WRITE_COMMITS)
        self._core.metrics.count(REMOTE_WRITE_COMMITTED, requests)

    def _store_remote_write(self, rows: Decoded) -> Appended:
        """One group-commit transaction of remote_write rows, counted in /metrics."""
        from warehouse.faults import signals
        from warehouse.remote_write.rows import oldest_ms
        from warehouse.tsdb.append import append

        core = self._core
        # node_risk's evidence goes in beside the samples, in the same transaction
        oldest = oldest_ms(rows)
        with core.writes.hold(rows, core.limits.timeout_s, "remote_write", oldest):
            stored = core.with_cursor(
                lambda cur: append(cur, rows, cache=self._series, then=signals.after_telemetry)
            )
        newest = pc.max(rows.samples["ts"]).as_py() if rows.samples.num_rows else None
        if newest is not None:  # how far behind the scrape the store is, when it committed
            self.lag_s = (datetime.now(UTC) - newest).total_seconds()
        for table, count in (("gpu_metrics", stored.gpu), ("prom_samples", stored.other)):
            core.metrics.count(REMOTE_WRITE_SAMPLES, count, table=table)
        for reason, count in (
            ("duplicate", stored.duplicates),
            ("native_histogram", rows.histograms),
            ("stale_marker", stored.stale),
        ):
            core.metrics.count(REMOTE_WRITE_NOT_STORED, count, reason=reason)
        return stored

    def refresh(
        self, user: User, name: str, *, full: bool = False
    ) -> list[tuple[Outcome, float | None]]:
        """Refresh dynamic table `name` now, after the dynamic tables it reads; each outcome
        with its duration in seconds, upstream first."""
        from warehouse.dynamic.schedule import run_due, seconds
        from warehouse.faults import thermal
        from warehouse.kernel.transactions import transaction
        from warehouse.tsdb import tiers

        require(user, "writer", "refresh")

        def work(cur: Cursor) -> list[tuple[Outcome, float | None]]:
            tiers.fold(cur)  # the downsampling tiers first: they follow every batch
            with transaction(cur):  # then the thermal residuals of the whole days they hold
                thermal.derive(cur)
            return [(o, seconds(cur, o)) for o in run_due(cur, name=name, full=full)]

        core = self._core
        with core.writes.hold(work, core.limits.timeout_s, "refresh"):
            return core.with_cursor(work)
