"""One client connection of the serve process (`service.serve.server.Server` hands them out).

Every face (HTTP per request, pgwire per connection) runs user SQL through `Session.run`:
check it against the user's role (`warehouse.security.policy`), run it on the session's own
cursor with a time limit (a timer calls `cursor.interrupt()`, so DuckDB stops working, not just
the caller waiting) and a row cap, and hand back an Arrow stream.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from service.serve.gate import Gate
from service.serve.metric_families import QUERIES, QUERY_ERRORS, Counter
from service.serve.metrics import Metrics
from service.serve.watchdog import WATCHDOG
from service.serve.writes import WriteGate
from warehouse.errors import UserError, WankaError, one_line
from warehouse.parsing.script import Script
from warehouse.query.executor import execute
from warehouse.security import policy
from warehouse.security.users import User

DEFAULT_TIMEOUT_S = 60.0
#: Statement types whose result is all there when `run` returns (nothing to stream).
_DRAINED = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE_INTO"})


class QueryTimeout(WankaError):
    """A query ran past its time limit and was interrupted."""


class QueryCancelled(WankaError):
    """A query was cancelled by its client."""


class ClientGone(QueryCancelled):
    """The client went away before reading the whole result."""


class Moved(QueryCancelled):
    """Stopped so that its face runs it again elsewhere (off an event loop): not a failure."""


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
    done: Callable[[str], None] | None = None  # told once how the query ended

    def finish(self, outcome: str) -> None:
        """The query ended: 'ok' (read to the end or the row cap), 'error', or 'client gone'
        (its reader stopped before the end)."""
        if self.done is not None:
            done, self.done = self.done, None
            done(outcome)

    def close(self) -> None:
        """Stop reading: releases the cursor for the next statement."""
        for reader in (self.reader, self.source):
            if reader is not None:
                reader.close()
        self.finish("client gone")

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
        metrics: Metrics | None = None,
        labels: dict[str, str] | None = None,
        release: Callable[[duckdb.DuckDBPyConnection, bool], None] | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.cursor = cursor
        self.gate = gate
        self._release = release  # (cursor, reusable): hands the cursor back to its pool
        self._wrote = False  # a statement that may change state ran (DDL may leave TEMP objects)
        self.writes = writes or WriteGate()
        self.metrics = metrics
        self.labels = {"face": "sql", **(labels or {})}  # face: http | pgwire; format: json ...
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
        sql: str | Script,
        params: Sequence[Any] | dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> Result:
        """Authorize and run `sql`; stream its last statement's result.

        The text is parsed once (`warehouse.parsing.script.parse`); the policy, the write gate and
        the query path all read that parse. Raises `policy.Refused` (nothing ran),
        `UserError` (bad SQL), `QueryTimeout`. `timeout_s` and `max_rows` may lower the
        session's limits, never raise them.
        """
        started = time.perf_counter()
        try:
            result = self._run(sql, params, timeout_s, max_rows)
        except BaseException as error:
            if isinstance(error, Moved):  # to be run again: counted as moved, not as failed
                done = self._on_done(started)
                if done is not None:
                    done("moved")
            else:
                kind = type(error).__name__
                self._count(QUERY_ERRORS, error=kind)
            raise
        result.started, result.done = started, self._on_done(started)
        if result.rowcount is not None or result.statement in _DRAINED:
            result.finish("ok")
        return result

    def _run(
        self,
        sql: str | Script,
        params: Sequence[Any] | dict[str, Any] | None,
        timeout_s: float | None,
        max_rows: int | None,
    ) -> Result:
        if self._closed:
            raise WankaError("this session is closed")
        if self._last is not None:
            self._last.close()  # a result left unread would block the cursor
            self._last = None
        try:
            script = policy.authorize(self.cursor, sql, self.user.role)
        except duckdb.InterruptException as error:
            raise self._translate(error) from None
        limit_s = min(timeout_s, self.timeout_s) if timeout_s else self.timeout_s
        cap = _lower(max_rows, self.max_rows)
        kind = script.last.type
        writing = self._writes(script)
        self._wrote = self._wrote or script.writes
        if writing:
            self.writes.acquire(self, limit_s, "sql")  # see service/serve/writes.py
        self._start_timer(limit_s)
        try:
            reader = execute(self.cursor, script, params, prepare=not self._in_transaction)
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
        if kind in _DRAINED:
            table = self._drain(reader)
            result.rowcount = int(table.column(0)[0].as_py()) if table.num_rows else 0
            result.reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
            return result
        result.reader = pa.RecordBatchReader.from_batches(reader.schema, self._capped(result))
        return result

    def turn(self) -> contextlib.AbstractContextManager[None]:
        """Wait for a turn to run (`gate.Gate`); faces run a query and its first batches in one."""
        return self.gate.turn() if self.gate is not None else contextlib.nullcontext()

    def _count(self, counter: Counter, **labels: str) -> None:
        if self.metrics is not None:
            self.metrics.count(counter, face=self.labels["face"], **labels)

    def _on_done(self, started: float) -> Callable[[str], None] | None:
        """What a result calls when its query ends: count it and observe its duration."""
        metrics, labels = self.metrics, self.labels
        if metrics is None:
            return None

        def done(outcome: str) -> None:
            metrics.count(QUERIES, outcome=outcome, **labels)
            metrics.observe_query(time.perf_counter() - started, face=labels["face"])

        return done

    def _writes(self, script: Script) -> bool:
        """Whether `script` writes, or ends a transaction that wrote; follows BEGIN/COMMIT."""
        ends = False
        for statement in script.statements:
            verb = statement.transaction
            if verb is not None:
                ends = ends or (verb != "BEGIN" and self._in_transaction)
                self._in_transaction = verb == "BEGIN"
        return script.writes or (ends and self.writes.holds(self))

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
    def interrupted(self) -> WankaError | None:
        """Why the running statement was interrupted (a time limit, a cancel), if it was."""
        return self._why_interrupted

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def wrote(self) -> bool:
        """Whether a statement that may change the database ran in this session."""
        return self._wrote

    def close(self) -> None:
        """Stop what runs and release the cursor."""
        if self._closed:
            return
        self._closed = True
        self._stop_timer()
        clean = True
        if self._last is not None:  # says how its query ended, if nobody has yet
            try:
                self._last.close()
            except (duckdb.Error, pa.ArrowException, ValueError):
                clean = False
        reusable = clean and not (self._in_transaction or self._wrote or self._why_interrupted)
        if self._release is not None:
            self._release(self.cursor, reusable)
        else:
            with contextlib.suppress(duckdb.Error):
                self.cursor.close()  # an open transaction rolls back with it
        self.writes.release(self)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- limits ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a statement of this session is running (its result not yet finished)."""
        return self._timer is not None

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
        outcome = "client gone"  # unless the loop ends or fails
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
            outcome = "ok"
        except GeneratorExit:
            raise
        except BaseException as error:
            why = self._why_interrupted
            gone = isinstance(why, ClientGone)
            outcome = "client gone" if gone else "moved" if isinstance(why, Moved) else "error"
            raise self._translate(error) from None
        finally:
            self._stop_timer()
            source.close()
            result.finish(outcome)


def _lower(asked: int | None, limit: int | None) -> int | None:
    """The smaller of two optional limits.

    >>> _lower(10, None), _lower(None, 5), _lower(10, 5)
    (10, 5, 5)
    """
    if asked is None:
        return limit
    return asked if limit is None else min(asked, limit)
