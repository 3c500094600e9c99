"""Hands out one `session.Session` per client, on a pooled cursor, with the limits in force.

Each session's cursor is lent by the engine with the hidden-table guards installed
(`warehouse.security.hidden`) and taken back when the client goes; all sessions share the
write gate (`writes.py`) and the gate on running Python (`gate.py`).
"""

from __future__ import annotations

import contextlib
import time
import weakref

import duckdb

from service.serve.core import Core
from service.serve.gate import Gate
from service.serve.session import QueryCancelled, Session
from service.serve.settings import ServeSettings
from warehouse.security import hidden
from warehouse.security.users import User

#: How long stopping waits for interrupted statements to end.
STOP_WAIT_S = 10.0


class Sessions:
    def __init__(self, core: Core) -> None:
        self._core = core
        self.gate = Gate()  # at most a few queries run their Python at once (gate.py)
        self._open: weakref.WeakSet[Session] = weakref.WeakSet()

    def start(self) -> None:
        """Nothing runs on its own: sessions live on the faces' threads."""

    def stop(self) -> None:
        """Interrupt the statements still running (the faces had their grace period to let
        them finish) and wait for them to end, so the engine can close under them."""
        running = [s for s in list(self._open) if s.running]
        for session in running:
            session.interrupt(QueryCancelled("the server is stopping"))
        deadline = time.monotonic() + STOP_WAIT_S
        while any(s.running for s in running) and time.monotonic() < deadline:
            time.sleep(0.05)

    def apply(self, settings: ServeSettings) -> None:
        """New limits (`Core.limits`) apply to the sessions opened after them."""

    def session(self, user: User, *, face: str = "http", fmt: str | None = None) -> Session:
        """A session of `user` on a cursor of its own; close it when the client goes.

        `face` and `fmt` label the session's queries in /metrics; JSON results are capped at
        `max_rows_json` rows, every other format at `max_rows`.
        """
        core = self._core
        limits = core.limits
        session = Session(
            core.engine.lend(hidden.install),
            user,
            timeout_s=limits.timeout_s,
            max_rows=limits.max_rows_json if fmt == "json" else limits.max_rows,
            writes=core.writes,
            metrics=core.metrics,
            labels={"face": face, **({"format": fmt} if fmt else {})},
            release=self._take_back,
            gate=self.gate,
        )
        self._open.add(session)
        return session

    def _take_back(self, cur: duckdb.DuckDBPyConnection, reusable: bool) -> None:
        with contextlib.suppress(duckdb.Error):
            self._core.engine.take_back(cur, reusable=reusable)
