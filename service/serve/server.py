"""The serve process: one `Server` owns the database file while HTTP, pgwire, the scheduler and
the live feeds share it.

It opens the engine locked down for user SQL and puts together the parts that do the work, each
typed, each with `start`, `stop` and `apply(settings)`:

- `auth.Auth`: passwords, tokens and SCRAM secrets, successes cached;
- `sessions.Sessions`: one `session.Session` per client, with the limits in force;
- `writer.Writer`: ingest, remote_write (group commit) and refreshes on request;
- `scheduler.Scheduler`: upkeep and refreshes as a list of scheduled jobs, on its own thread;
- `retention_rules.RetentionRules`: the retention rules a configuration file sets;
- `feeds.Feeds`: scraping and Slurm polling, each on its own thread;
- `rules.Rules`: Prometheus rule groups evaluated on their own thread, alerts to Alertmanager.

They share one `core.Core` (engine, write gate, /metrics counters, limits), never each other.
The faces call the server's methods below, each handed to its part.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, BinaryIO, Protocol, TypeVar

from service.serve import auth, process
from service.serve.auth import Auth
from service.serve.core import Core, Cursor
from service.serve.feeds import Feeds
from service.serve.metric_families import (
    BUILD_INFO,
    CONFIG_RELOAD_AT,
    CONFIG_RELOAD_OK,
    PROCESS_START,
    PROMQL_CACHE_ANSWERS,
    PROMQL_CACHE_POINTS,
)
from service.serve.metrics import Gauges, Metrics
from service.serve.retention_rules import RetentionRules
from service.serve.rules import Rules
from service.serve.scheduler import Scheduler
from service.serve.session import Session
from service.serve.sessions import Sessions
from service.serve.settings import Limits, ServeSettings
from service.serve.throttle import AuthThrottle
from service.serve.writer import Writer
from service.serve.writes import WriteGate
from warehouse.promql.result_cache import ResultCache
from warehouse.security.users import ScramSecret, User

if TYPE_CHECKING:
    from warehouse.dynamic.schedule import Outcome
    from warehouse.ingest import IngestResult, ReadOptions
    from warehouse.kernel.engine import Engine
    from warehouse.tsdb.append import Appended

__all__ = ["Limits", "ServeSettings", "Server"]
R = TypeVar("R")


class Part(Protocol):
    """What the server asks of each of its parts."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def apply(self, settings: ServeSettings) -> None: ...


class Server:
    """The one process that owns the database file while serving it.

    `Server(path)` opens the engine and locks it down (no file access, settings locked, memory
    limit); `start(settings)` starts what runs on its own (the scheduler, the feeds); `apply`
    hands new settings to every part; `close` stops the parts in reverse order, then the engine.
    """

    def __init__(
        self, path: str | None, *, limits: Limits | None = None, lock_down: bool = True
    ) -> None:
        from warehouse.dynamic.shipped import ensure_shipped
        from warehouse.kernel.engine import Engine

        # until start(settings): no scheduler, no feeds
        self.settings = ServeSettings(path, limits=limits or Limits(), refresh_interval_s=None)
        self.engine: Engine = Engine(path)
        ensure_shipped(self.engine)
        self.schema_version = self.engine.schema_version
        if lock_down:
            self.engine.lock_down(memory_limit=self.settings.limits.memory_limit)
        metrics = Metrics()
        self.core = Core(self.engine, metrics, WriteGate(metrics), self.settings.limits)
        #: Range answers kept for their steps older than its offset (settings.promql_cache_s)
        self.promql_cache = ResultCache(
            self.settings.promql_cache_s or 0.0,
            answered=lambda kind: metrics.count(PROMQL_CACHE_ANSWERS, kind=kind),
        )
        self.core.writes.listen(self.promql_cache.note_write)
        self.auth_throttle = AuthThrottle()  # failed logins per address, both faces
        self.auth = Auth(self.core)
        self.sessions = Sessions(self.core)
        self.writer = Writer(self.core)
        self.scheduler = Scheduler(self.core)
        self.feeds = Feeds(self.core)
        self.retention = RetentionRules(self.core)
        self.rules = Rules(self.core)
        parts = (
            self.auth, self.sessions, self.writer, self.retention, self.scheduler, self.feeds,
            self.rules,
        )  # fmt: skip
        #: "starting" until `start` is done, "ready" while serving, "stopping" once asked to stop:
        #: what /-/ready answers by.
        self.state = "starting"
        #: The last reading of the configuration: whether it worked, when one last worked.
        self.config_read: tuple[bool, float] = (True, time.time())
        self._parts: tuple[Part, ...] = parts  # started in this order, stopped in reverse

    @property
    def limits(self) -> Limits:
        return self.core.limits

    @property
    def metrics(self) -> Metrics:
        return self.core.metrics

    @property
    def writes(self) -> WriteGate:
        return self.core.writes

    # -- life --------------------------------------------------------------------------------

    def start(self, settings: ServeSettings | None = None) -> None:
        """Apply `settings` (when given), then start every part: the scheduler, then the feeds
        (a bad scrape config raises UserError here)."""
        if settings is not None:
            self.apply(settings)
        for part in self._parts:
            part.start()
        self.state = "ready"

    def apply(self, settings: ServeSettings) -> None:
        """New settings for every part: the limits apply to what starts after them; the
        scheduler and the feeds restart where what they read changed. The engine's memory limit
        and the addresses listened on stay as opened."""
        self.settings = settings
        self.core.limits = settings.limits
        self.promql_cache.set_offset(settings.promql_cache_s)
        for part in self._parts:
            part.apply(settings)

    def close(self) -> None:
        """Stop the parts (feeds, scheduler, writer, ...) and close the database."""
        for part in reversed(self._parts):
            part.stop()
        self.engine.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the faces call -----------------------------------------------------------------

    def with_cursor(self, work: Callable[[Cursor], R]) -> R:
        """`work(cursor)` on a cursor of its own, closed afterwards."""
        return self.core.with_cursor(work)

    def any_users(self) -> bool:
        return self.auth.any_users()

    def scram_secret(self, name: str) -> ScramSecret | None:
        return self.auth.scram_secret(name)

    def cached_password(self, name: str, password: str) -> User | None:
        return self.auth.cached_password(name, password)

    def cached_token(self, token: str) -> User | None:
        return self.auth.cached_token(token)

    def check_password(self, name: str, password: str) -> User | None:
        return self.auth.check_password(name, password)

    def check_token(self, token: str) -> User | None:
        return self.auth.check_token(token)

    def require(self, user: User, role: str, what: str) -> None:
        """Raise policy.Refused unless `user`'s role includes `role`."""
        auth.require(user, role, what)

    def session(self, user: User, *, face: str = "http", fmt: str | None = None) -> Session:
        return self.sessions.session(user, face=face, fmt=fmt)

    def ingest(
        self,
        user: User,
        fmt: str,
        uploads: list[tuple[str, BinaryIO]],
        options: ReadOptions,
        *,
        force: bool = False,
    ) -> list[IngestResult]:
        return self.writer.ingest(user, fmt, uploads, options, force=force)

    def remote_write(self, user: User, body: bytes, sender: Hashable | None = None) -> Appended:
        return self.writer.remote_write(user, body, sender)

    def refresh(
        self, user: User, name: str, *, full: bool = False
    ) -> list[tuple[Outcome, float | None]]:
        return self.writer.refresh(user, name, full=full)

    def gauges(self) -> Gauges:
        """The parts' gauges for /metrics (feeds' targets and polls, scheduled jobs' last runs),
        and the process's: what it was built from, when it started, its configuration."""
        ok, at = self.config_read
        return {
            **self.feeds.gauges(),
            **self.scheduler.gauges(),
            **self.writer.gauges(),
            **self.rules.gauges(),
            BUILD_INFO: {process.build_info(): 1.0},
            PROCESS_START: {(): process.start_time()},
            CONFIG_RELOAD_OK: {(): float(ok)},
            CONFIG_RELOAD_AT: {(): at},
            PROMQL_CACHE_POINTS: {(): float(self.promql_cache.points)},
        }
