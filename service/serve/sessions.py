"""Hands out one `session.Session` per client, on a pooled cursor, with the limits in force.

Each session's cursor is lent by the engine with the hidden-table guards installed
(`warehouse.security.hidden`) and taken back when the client goes; all sessions share the
write gate (`writes.py`) and the gate on running Python (`gate.py`).
"""

from __future__ import annotations

import contextlib

import duckdb

from service.serve.core import Core
from service.serve.gate import Gate
from service.serve.session import Session
from service.serve.settings import ServeSettings
from warehouse.security import hidden
from warehouse.security.users import User


class Sessions:
    def __init__(self, core: Core) -> None:
        self._core = core
        self.gate = Gate()  # at most a few queries run their Python at once (gate.py)

    def start(self) -> None:
        """Nothing runs on its own: sessions live on the faces' threads."""

    def stop(self) -> None:
        """Open sessions end with their clients (the faces close them before the engine)."""

    def apply(self, settings: ServeSettings) -> None:
        """New limits (`Core.limits`) apply to the sessions opened after them."""

    def session(self, user: User, *, face: str = "http", fmt: str | None = None) -> Session:
        """A session of `user` on a cursor of its own; close it when the client goes.

        `face` and `fmt` label the session's queries in /metrics; JSON results are capped at
        `max_rows_json` rows, every other format at `max_rows`.
        """
        core = self._core
        limits = core.limits
        return Session(
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

    def _take_back(self, cur: duckdb.DuckDBPyConnection, reusable: bool) -> None:
        with contextlib.suppress(duckdb.Error):
            self._core.engine.take_back(cur, reusable=reusable)
