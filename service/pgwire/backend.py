"""What the PostgreSQL face needs from the warehouse core, as protocols.

`start(server, ...)` takes the serve process's `Server`: `server.session(user, face="pgwire")`
opens a `Session` whose `run(sql, params=None, *, timeout_s=None, max_rows=None)` returns a
`Result`, and SCRAM verifiers come from `warehouse.security.users.scram_secret` on a cursor of
`server.engine`. A server object may instead offer `scram_secret(name)` itself (tests do).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

import pyarrow as pa


class Result(Protocol):
    @property
    def reader(self) -> pa.RecordBatchReader: ...
    @property
    def statement(self) -> str: ...
    @property
    def rowcount(self) -> int | None: ...


class Session(Protocol):
    def run(
        self,
        sql: str,
        params: Any = None,
        *,
        timeout_s: float | None = None,
        max_rows: int | None = None,
    ) -> Result: ...
    def interrupt(self) -> None: ...
    def close(self) -> None: ...
    def turn(self) -> AbstractContextManager[None]:
        """Wait for a turn to run a statement and read its first batches."""
        ...


class Server(Protocol):
    def session(self, user: Any, *, face: str = ...) -> Session: ...


def user_of(secret: Any) -> Any:
    """The `User` a SCRAM secret belongs to."""
    return getattr(secret, "user", None)


def scram_secret(server: Any, name: str) -> Any:
    """The stored SCRAM secret for `name`, or None for an unknown user (blocking)."""
    own = getattr(server, "scram_secret", None)
    if callable(own):
        return own(name)
    from warehouse.security import users  # type: ignore[import-not-found,unused-ignore]

    cur = server.engine.cursor()
    try:
        return users.scram_secret(cur, name)
    finally:
        cur.close()


def compat_cursor(server: Any) -> Any:
    """A privileged cursor to install the catalog compatibility objects, or None."""
    own = getattr(server, "compat_cursor", None)
    if callable(own):
        return own()
    engine = getattr(server, "engine", None)
    return engine.cursor() if engine is not None else None


def local_admin(name: str) -> Any:
    """The user a loopback client runs as while the server has no users."""
    from warehouse.security.users import User

    return User(name or "local", "admin")
