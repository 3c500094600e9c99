"""The serve process: one `Server` owns the database; one `Session` per client connection.

Every face (HTTP per request, pgwire per connection) runs user SQL through `Session.run`:
check it against the user's role (`warehouse.security.policy`), run it on the session's own
cursor with a time limit (a timer calls `cursor.interrupt()`, so DuckDB stops working, not just
the caller waiting) and a row cap, and hand back an Arrow stream.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from service.throttle import AuthThrottle
from service.watchdog import WATCHDOG
from service.writes import WriteGate, WriterBusy
from warehouse.errors import UserError, WankaError
from warehouse.query import execute, one_line
from warehouse.security import policy
from warehouse.security import users as users_module
from warehouse.security.users import User

DEFAULT_TIMEOUT_S = 60.0


class QueryTimeout(WankaError):
    """A query ran past its time limit and was interrupted."""


class QueryCancelled(WankaError):
    """A query was cancelled by its client."""


class OutOfMemory(WankaError):
    """A query needed more memory than the server allows."""


@dataclass
class Result:
    """What `Session.run` hands back. Drain or close `reader` before the next `run`."""

    reader: pa.RecordBatchReader
    statement: str  # DuckDB's statement type of the last statement: 'SELECT', 'INSERT', ...
    rowcount: int | None = None  # rows a DML statement changed
    max_rows: int | None = None
    truncated: bool = False  # set once the reader stopped at max_rows
    rows: int = 0  # rows handed out so far
    started: float = field(default_factory=time.perf_counter)
    source: pa.RecordBatchReader | None = None  # DuckDB's own stream under `reader`

    def close(self) -> None:
        """Stop reading: releases the cursor for the next statement."""
        for reader in (self.reader, self.source):
            if reader is not None:
                reader.close()

    @property
    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000


class Session:
    """One client's connection to the served database: its cursor, its user, its limits."""

    def __init__(
        self,
        cursor: duckdb.DuckDBPyConnection,
        user: User,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_rows: int | None = None,
        writes: WriteGate | None = None,
    ) -> None:
        self.cursor = cursor
        self.writes = writes or WriteGate()
        self._in_transaction = False
        self.user = user
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self._timer: int | None = None  # a watchdog ticket while a statement runs
        self._why_interrupted: WankaError | None = None
        self._closed = False
        self._last: Result | None = None

    def run(
        self,
        sql: str,
        params: Sequence[Any] | dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> Result:
        """Authorize and run `sql`; stream its last statement's result.

        Raises `policy.Refused` (nothing ran), `UserError` (bad SQL), `QueryTimeout`.
        `timeout_s` and `max_rows` may lower the session's limits, never raise them.
        """
        if self._closed:
            raise WankaError("this session is closed")
        if self._last is not None:
            self._last.close()  # a result left unread would block the cursor
            self._last = None
        try:
            policy.authorize(self.cursor, sql, self.user.role)
        except duckdb.InterruptException as error:
            raise self._translate(error) from None
        limit_s = min(timeout_s, self.timeout_s) if timeout_s else self.timeout_s
        cap = _lower(max_rows, self.max_rows)
        kind = policy.last_statement_type(self.cursor, sql)
        writing = self._writes(sql, kind)
        if writing:
            self.writes.acquire(self, limit_s)  # see service/writes.py
        self._start_timer(limit_s)
        try:
            reader = execute(self.cursor, sql, params)
        except BaseException as error:
            self._stop_timer()
            self._after_write(writing)
            raise self._translate(error) from None
        if writing:  # a write has run whole in execute(): its count is all there is to read
            table = self._drain(reader)
            self._after_write(writing)
            reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        result = Result(reader, kind, max_rows=cap, source=reader)
        self._last = result
        if kind in {"INSERT", "UPDATE", "DELETE", "MERGE_INTO"}:
            table = self._drain(reader)
            result.rowcount = int(table.column(0)[0].as_py()) if table.num_rows else 0
            result.reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
            return result
        result.reader = pa.RecordBatchReader.from_batches(reader.schema, self._capped(result))
        return result

    def _writes(self, sql: str, kind: str) -> bool:
        """Whether `sql` writes (or opens/closes a transaction that may have written)."""
        if kind == "TRANSACTION":
            word = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
            if word in ("BEGIN", "START"):
                self._in_transaction = True
                return False
            self._in_transaction = False
            return self.writes.holds(self)  # COMMIT/ROLLBACK of a transaction that wrote
        if kind == "SELECT":
            try:
                return len(self.cursor.extract_statements(sql)) != 1
            except duckdb.Error:  # a script with DYNAMIC TABLE statements: those write
                return True
        return not (kind == "EXPLAIN" and "analyze" not in sql.lower())

    def _after_write(self, writing: bool) -> None:
        """Keep the gate inside an explicit transaction; give it back otherwise."""
        if writing and not self._in_transaction:
            self.writes.release(self)

    def interrupt(self, why: WankaError | None = None) -> None:
        """Stop the statement running on this session now (any thread may call this)."""
        if self._closed:
            return
        self._why_interrupted = why or QueryCancelled("the query was cancelled")
        with contextlib.suppress(duckdb.Error):  # closed by its owner in the meantime
            self.cursor.interrupt()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop what runs and release the cursor."""
        if self._closed:
            return
        self._closed = True
        self._stop_timer()
        with contextlib.suppress(duckdb.Error):
            self.cursor.close()  # an open transaction rolls back with it
        self.writes.release(self)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- limits ------------------------------------------------------------------------------

    def _start_timer(self, limit_s: float) -> None:
        self._stop_timer()
        self._why_interrupted = None

        def expire() -> None:
            why = f"the query ran past its time limit of {limit_s:g} s and was stopped"
            self.interrupt(QueryTimeout(why))

        self._timer = WATCHDOG.arm(limit_s, expire)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            WATCHDOG.disarm(self._timer)
            self._timer = None

    def _translate(self, error: BaseException) -> BaseException:
        """The error a client should see for an exception raised while running or streaming."""
        text = str(error)
        if isinstance(error, duckdb.InterruptException) or "INTERRUPT" in text:
            return self._why_interrupted or QueryCancelled("the query was interrupted")
        if isinstance(error, duckdb.OutOfMemoryException) or "Out of Memory" in text:
            reason = one_line(text).split(" Possible solutions", 1)[0]
            return OutOfMemory(f"the query needs more memory than the server allows: {reason}")
        if type(error) is WankaError and not text.startswith(("INTERNAL", "FATAL", "IO Error")):
            return UserError(text)  # DuckDB refused this SQL (a type, a constraint, ...)
        if isinstance(error, WankaError):
            return error
        if isinstance(error, (duckdb.Error, OSError, pa.ArrowException)):
            return UserError(one_line(text))
        return error

    def _drain(self, reader: pa.RecordBatchReader) -> pa.Table:
        try:
            return reader.read_all()
        except BaseException as error:
            raise self._translate(error) from None
        finally:
            self._stop_timer()

    def _capped(self, result: Result) -> Iterator[pa.RecordBatch]:
        """The reader's batches up to the row cap; the timer stops when the stream ends."""
        source = result.source
        assert source is not None
        try:
            for batch in source:
                cap = result.max_rows
                if cap is not None and result.rows + batch.num_rows > cap:
                    keep = cap - result.rows
                    if keep:
                        yield batch.slice(0, keep)
                    result.rows = cap
                    result.truncated = True
                    break
                result.rows += batch.num_rows
                yield batch
        except BaseException as error:
            raise self._translate(error) from None
        finally:
            self._stop_timer()
            source.close()


def _lower(asked: int | None, limit: int | None) -> int | None:
    """The smaller of two optional limits.

    >>> _lower(10, None), _lower(None, 5), _lower(10, 5)
    (10, 5, 5)
    """
    if asked is None:
        return limit
    return asked if limit is None else min(asked, limit)


# -- the server ----------------------------------------------------------------------------

_AUTH_CACHE_S = 60.0


@dataclass(frozen=True)
class Limits:
    """What one query may take. Requests may lower these, never raise them."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_rows_json: int = 100_000  # JSON is for people and small tools: capped by default
    max_rows: int | None = None  # every other format: uncapped unless configured
    memory_limit: str | None = None  # DuckDB's memory_limit for the instance, e.g. '8GB'
    max_upload_bytes: int = 1 << 30  # one ingest request body
    max_connections_per_user: int = 64  # pgwire connections one user may hold at once
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
        from service.metrics import Metrics
        from warehouse.engine import Engine

        self.limits = limits or Limits()
        self.engine = Engine(path)
        self.schema_version = self.engine.schema_version
        if lock_down:
            self.engine.lock_down(memory_limit=self.limits.memory_limit)
        self.metrics = Metrics()
        self._auth_lock = threading.Lock()
        self._basic_cache: dict[tuple[str, bytes], tuple[User, float]] = {}
        self._token_cache: dict[str, tuple[User, float]] = {}
        self._stop = threading.Event()
        self._scheduler: threading.Thread | None = None
        self.writes = WriteGate()  # ingest, DML, DDL and refreshes take turns
        self.auth_throttle = AuthThrottle()  # failed logins per address, both faces

    # -- users -------------------------------------------------------------------------------

    def with_cursor(self, work: Any) -> Any:
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

    def check_password(self, name: str, password: str) -> User | None:
        """HTTP Basic: the user when the password is right; successes cached for a minute."""
        import hashlib

        key = (name, hashlib.sha256(password.encode()).digest())
        now = time.monotonic()
        with self._auth_lock:
            hit = self._basic_cache.get(key)
        if hit is not None and hit[1] > now:
            return hit[0]
        user = self.with_cursor(lambda cur: users_module.check_password(cur, name, password))
        if user is not None:
            with self._auth_lock:
                self._basic_cache[key] = (user, now + _AUTH_CACHE_S)
        return user

    def check_token(self, token: str) -> User | None:
        """Bearer: the token's user; successes cached for a minute, last use noted then."""
        now = time.monotonic()
        with self._auth_lock:
            hit = self._token_cache.get(token)
        if hit is not None and hit[1] > now:
            return hit[0]

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
                self._token_cache[token] = (user, now + _AUTH_CACHE_S)
        return user

    def forget_credentials(self) -> None:
        """Drop cached credential checks (after users or tokens change)."""
        with self._auth_lock:
            self._basic_cache.clear()
            self._token_cache.clear()

    # -- work --------------------------------------------------------------------------------

    def session(self, user: User, *, json_rows: bool = False) -> Session:
        """A session of `user` on a cursor of its own; close it when the client goes."""
        cap = self.limits.max_rows_json if json_rows else self.limits.max_rows
        return Session(
            self.engine.cursor(),
            user,
            timeout_s=self.limits.timeout_s,
            max_rows=cap,
            writes=self.writes,
        )

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
                self.metrics.count(
                    "wanka_ingest_rows_total", "Rows ingested.", rows, format=fmt, table=table
                )
            self.metrics.count(
                "wanka_ingest_rejects_total",
                "Lines rejected by ingest.",
                result.rejected,
                format=fmt,
            )
            results.append(result)
        return results

    def refresh(
        self, user: User, name: str, *, full: bool = False
    ) -> list[tuple[Any, float | None]]:
        """Refresh dynamic table `name` now; each outcome with its duration in seconds."""
        from warehouse.dynamic.schedule import run_due, seconds

        self.require(user, "writer", "refresh")

        def work(cur: duckdb.DuckDBPyConnection) -> list[tuple[Any, float | None]]:
            return [(o, seconds(cur, o)) for o in run_due(cur, name=name, full=full)]

        with self.writes.hold(work, self.limits.timeout_s):
            return self.with_cursor(work)

    # -- scheduler ---------------------------------------------------------------------------

    def start_scheduler(self, interval_s: float = 10.0) -> None:
        """Refresh due dynamic tables every `interval_s` in a thread of its own."""
        self._scheduler = threading.Thread(
            target=self._schedule, args=(interval_s,), name="wanka-scheduler", daemon=True
        )
        self._scheduler.start()

    def _schedule(self, interval_s: float) -> None:
        from warehouse.dynamic.schedule import run_due

        cur = self.engine.cursor()
        try:
            while not self._stop.wait(interval_s):
                try:
                    with self.writes.hold(cur, interval_s):
                        outcomes = run_due(cur)
                except WriterBusy:
                    self.metrics.count(
                        "wanka_scheduler_waits_total",
                        "Scheduler passes skipped while another write held the database.",
                    )
                    continue
                except Exception as error:  # the loop must outlive any one failure
                    self.metrics.count(
                        "wanka_scheduler_errors_total",
                        "Scheduler passes that failed.",
                        error=type(error).__name__,
                    )
                    continue
                for outcome in outcomes:
                    self.metrics.count(
                        "wanka_refreshes_total",
                        "Dynamic table refreshes by the scheduler.",
                        table=outcome.name,
                        outcome=type(outcome).__name__.lower(),
                    )
        finally:
            cur.close()

    def close(self) -> None:
        """Stop the scheduler and close the database."""
        self._stop.set()
        if self._scheduler is not None:
            self._scheduler.join(timeout=30)
        self.engine.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
