"""The serve process: one `Server` owns the database file while HTTP, pgwire and the refresh
scheduler share it.

It opens the engine locked down for user SQL, checks credentials (caching successes), hands out
one `service.serve.session.Session` per client, serialises writes and refreshes
(`service/serve/writes.py`) and runs the scheduler in a thread of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb

from service.serve.gate import Gate
from service.serve.metric_families import (
    INGEST_REJECTS,
    INGEST_ROWS,
    REFRESHES,
    REMOTE_WRITE_NOT_STORED,
    REMOTE_WRITE_SAMPLES,
    RETENTION_ROWS_DROPPED,
    SCHEDULER_ERRORS,
    SCHEDULER_WAITS,
)
from service.serve.metrics import Gauges
from service.serve.remote_write import GroupCommit
from service.serve.session import DEFAULT_TIMEOUT_S, Session
from service.serve.throttle import AuthThrottle
from service.serve.writes import WriteGate, WriterBusy
from warehouse.security import hidden, policy
from warehouse.security import users as users_module
from warehouse.security.users import User

_AUTH_CACHE_S = 60.0
R = TypeVar("R")


def _basic_key(name: str, password: str) -> tuple[str, bytes]:
    """The cache key of a Basic credential: the password itself is never kept."""
    return name, hashlib.sha256(password.encode()).digest()


@dataclass(frozen=True)
class Limits:
    """What one query may take. Requests may lower these, never raise them."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_rows_json: int = 100_000  # JSON is for people and small tools: capped by default
    max_rows: int | None = None  # every other format: uncapped unless configured
    memory_limit: str | None = None  # DuckDB's memory_limit for the instance, e.g. '8GB'
    max_upload_bytes: int = 1 << 30  # one ingest request body
    max_connections_per_user: int = 64  # pgwire connections one user may hold at once
    max_connections: int = 256  # pgwire connections in all (each holds a thread)
    startup_timeout_s: float = 30.0  # pgwire: to finish startup and login (slowloris guard)


class Server:
    """The one process that owns the database file while serving it.

    Opens the engine, locks it down for user SQL (no file access, settings locked, memory
    limit), checks credentials (caching successful checks: PBKDF2 per request would cap a busy
    server at a few hundred requests a second), hands out sessions, and runs the refresh
    scheduler in a thread of its own with its own cursor.
    """

    def __init__(
        self, path: str | None, *, limits: Limits | None = None, lock_down: bool = True
    ) -> None:
        from service.serve.metrics import Metrics
        from warehouse.dynamic.shipped import ensure_shipped
        from warehouse.kernel.engine import Engine

        self.limits = limits or Limits()
        self.engine = Engine(path)
        ensure_shipped(self.engine)
        self.schema_version = self.engine.schema_version
        if lock_down:
            self.engine.lock_down(memory_limit=self.limits.memory_limit)
        self.metrics = Metrics()
        self._auth_lock = threading.Lock()
        self._basic_cache: dict[tuple[str, bytes], tuple[User, float]] = {}
        self._token_cache: dict[str, tuple[User, float]] = {}
        self.stopping = threading.Event()  # set by close(): the scheduler and feeds stop
        self.feeds: list[Any] = []  # the scrape and Slurm loops (service/serve/feeds.py)
        self._scheduler: threading.Thread | None = None
        self.writes = WriteGate()  # ingest, DML, DDL and refreshes take turns
        self.gate = Gate()  # at most a few queries run their Python at once (serve/gate.py)
        self.auth_throttle = AuthThrottle()  # failed logins per address, both faces
        self._series_cache: Any = None  # remote_write's label sets seen (built on first use)
        self._group_commit: GroupCommit | None = None  # remote_write's writer (on first use)
        self._remote_write_setup = threading.Lock()

    # -- users -------------------------------------------------------------------------------

    def with_cursor(self, work: Callable[[duckdb.DuckDBPyConnection], R]) -> R:
        """`work(cursor)` on a cursor of its own, closed afterwards."""
        cur = self.engine.cursor()
        try:
            return work(cur)
        finally:
            cur.close()

    def any_users(self) -> bool:
        return bool(self.with_cursor(users_module.any_users))

    def scram_secret(self, name: str) -> users_module.ScramSecret | None:
        """The SCRAM verifiers of `name`, for pgwire's authentication exchange."""
        return self.with_cursor(lambda cur: users_module.scram_secret(cur, name))

    def cached_password(self, name: str, password: str) -> User | None:
        """HTTP Basic from the cache of successful checks only (no database, no PBKDF2)."""
        return self._cached(self._basic_cache, _basic_key(name, password))

    def cached_token(self, token: str) -> User | None:
        """Bearer from the cache of successful checks only."""
        return self._cached(self._token_cache, token)

    def _cached(self, cache: dict[Any, tuple[User, float]], key: Any) -> User | None:
        with self._auth_lock:
            hit = cache.get(key)
        return hit[0] if hit is not None and hit[1] > time.monotonic() else None

    def check_password(self, name: str, password: str) -> User | None:
        """HTTP Basic: the user when the password is right; successes cached for a minute."""
        hit = self.cached_password(name, password)
        if hit is not None:
            return hit
        user = self.with_cursor(lambda cur: users_module.check_password(cur, name, password))
        if user is not None:
            with self._auth_lock:
                key = _basic_key(name, password)
                self._basic_cache[key] = (user, time.monotonic() + _AUTH_CACHE_S)
        return user

    def check_token(self, token: str) -> User | None:
        """Bearer: the token's user; successes cached for a minute, last use noted then."""
        hit = self.cached_token(token)
        if hit is not None:
            return hit

        def check(cur: duckdb.DuckDBPyConnection) -> User | None:
            user = users_module.check_token(cur, token)
            if user is not None:
                # another request may note the same use at the same moment: one is enough
                with contextlib.suppress(duckdb.TransactionException):
                    users_module.touch_token(cur, token)
            return user

        user = self.with_cursor(check)
        if user is not None:
            with self._auth_lock:
                self._token_cache[token] = (user, time.monotonic() + _AUTH_CACHE_S)
        return user

    # -- work --------------------------------------------------------------------------------

    def session(self, user: User, *, face: str = "http", fmt: str | None = None) -> Session:
        """A session of `user` on a cursor of its own; close it when the client goes.

        `face` and `fmt` label the session's queries in /metrics; JSON results are capped at
        `max_rows_json` rows, every other format at `max_rows`.
        """
        cap = self.limits.max_rows_json if fmt == "json" else self.limits.max_rows
        return Session(
            self.engine.lend(hidden.install),
            user,
            timeout_s=self.limits.timeout_s,
            max_rows=cap,
            writes=self.writes,
            metrics=self.metrics,
            labels={"face": face, **({"format": fmt} if fmt else {})},
            release=self._take_back,
            gate=self.gate,
        )

    def _take_back(self, cur: duckdb.DuckDBPyConnection, reusable: bool) -> None:
        with contextlib.suppress(duckdb.Error):
            self.engine.take_back(cur, reusable=reusable)

    def require(self, user: User, role: str, what: str) -> None:
        """Raise policy.Refused unless `user`'s role includes `role`."""
        from warehouse.security.users import ROLES

        if ROLES.index(user.role) < ROLES.index(role):
            raise policy.Refused(f"{what} needs the {role} role; {user.name} is a {user.role}")

    def ingest(
        self,
        user: User,
        fmt: str,
        uploads: list[tuple[str, Any]],
        options: Any,
        *,
        force: bool = False,
    ) -> list[Any]:
        """Ingest uploaded streams (name, file) as the CLI would: one batch per stream."""
        from warehouse.ingest import ingest_stream

        self.require(user, "writer", "ingest")
        results = []
        for name, stream in uploads:
            # an ingest may take minutes: it waits for another writer as long as it could run
            with self.writes.hold(stream, self.limits.timeout_s * 10):
                result = ingest_stream(self.engine, fmt, stream, name, options, force=force)
            for table, rows in result.rows.items():
                self.metrics.count(INGEST_ROWS, rows, format=fmt, table=table)
            self.metrics.count(INGEST_REJECTS, result.rejected, format=fmt)
            results.append(result)
        return results

    def remote_write(self, user: User, body: bytes) -> Any:
        """Store one Prometheus remote_write body (warehouse/remote_write): decoded and checked
        here, then stored with the requests queued beside it in one transaction through the
        write gate (serve/remote_write.py); what that transaction stored."""
        from warehouse.ingest.batch import read_context
        from warehouse.ingest.models import ModelNames
        from warehouse.remote_write import decode, rows

        self.require(user, "writer", "remote_write")
        with self._remote_write_setup:  # the first requests arrive together (one per shard)
            if self._series_cache is None:
                names = ModelNames(read_context(self.engine).model_names)
                self._series_cache = rows.SeriesCache(names)
            if self._group_commit is None:
                self._group_commit = GroupCommit(self._store_remote_write)
        decoded = decode.decode(body, self._series_cache, rows.Limits())
        try:
            return self._group_commit.submit(decoded).result(timeout=self.limits.timeout_s * 3)
        except TimeoutError:
            raise WriterBusy(
                f"the remote_write was not stored within {self.limits.timeout_s * 3:g} s"
            ) from None

    def _store_remote_write(self, rows: Any) -> Any:
        """One group-commit transaction of remote_write rows, counted in /metrics."""
        from warehouse.tsdb.append import append

        with self.writes.hold(rows, self.limits.timeout_s):
            stored = self.with_cursor(lambda cur: append(cur, rows, cache=self._series_cache))
        for table, count in (("gpu_metrics", stored.gpu), ("prom_samples", stored.other)):
            self.metrics.count(REMOTE_WRITE_SAMPLES, count, table=table)
        for what, count in (
            ("duplicate", stored.duplicates),
            ("native_histogram", rows.histograms),
            ("stale_marker", stored.stale),
        ):
            self.metrics.count(REMOTE_WRITE_NOT_STORED, count, reason=what)
        return stored

    def refresh(
        self, user: User, name: str, *, full: bool = False
    ) -> list[tuple[Any, float | None]]:
        """Refresh dynamic table `name` now; each outcome with its duration in seconds."""
        from warehouse.dynamic.schedule import run_due, seconds
        from warehouse.tsdb.upkeep import upkeep

        self.require(user, "writer", "refresh")

        def work(cur: duckdb.DuckDBPyConnection) -> list[tuple[Any, float | None]]:
            upkeep(cur, drop=False)  # the downsampling tiers first: they follow every batch
            return [(o, seconds(cur, o)) for o in run_due(cur, name=name, full=full)]

        with self.writes.hold(work, self.limits.timeout_s):
            return self.with_cursor(work)

    # -- live feeds --------------------------------------------------------------------------

    def start_feed(self, feed: Any) -> None:
        """Run a feed (service/serve/feeds.py) until the server closes."""
        self.feeds.append(feed.start())

    def feed_gauges(self) -> Gauges:
        """The feeds' gauges for /metrics: scrape targets' health, Slurm poll failures."""
        gauges: Gauges = {}
        for feed in self.feeds:
            gauges.update(feed.gauges())
        return gauges

    # -- scheduler ---------------------------------------------------------------------------

    def start_scheduler(self, interval_s: float = 10.0) -> None:
        """Refresh due dynamic tables every `interval_s` in a thread of its own."""
        self._scheduler = threading.Thread(
            target=self._schedule, args=(interval_s,), name="wanka-scheduler", daemon=True
        )
        self._scheduler.start()

    def _schedule(self, interval_s: float) -> None:
        from warehouse.dynamic.schedule import run_due
        from warehouse.tsdb.upkeep import upkeep

        cur = self.engine.cursor()
        try:
            while not self.stopping.wait(interval_s):
                try:
                    with self.writes.hold(cur, interval_s):
                        dropped = upkeep(cur).dropped
                        outcomes = run_due(cur, next_pass_s=interval_s)
                except WriterBusy:
                    self.metrics.count(SCHEDULER_WAITS)
                    continue
                except Exception as error:  # the loop must outlive any one failure
                    self.metrics.count(SCHEDULER_ERRORS, error=type(error).__name__)
                    continue
                for done in dropped:
                    self.metrics.count(RETENTION_ROWS_DROPPED, done.rows, table=done.table)
                for outcome in outcomes:
                    kind = type(outcome).__name__.lower()
                    self.metrics.count(REFRESHES, table=outcome.name, outcome=kind)
        finally:
            cur.close()

    def close(self) -> None:
        """Stop the scheduler and close the database."""
        self.stopping.set()
        if self._scheduler is not None:
            self._scheduler.join(timeout=30)
        for feed in self.feeds:
            feed.join()
        if self._group_commit is not None:
            self._group_commit.close()
        self.engine.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
