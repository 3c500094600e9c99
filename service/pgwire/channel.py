"""What running a portal needs of its connection (`Channel`), so that `cursors` and `copyout`
depend on this small protocol rather than on `connection`, which calls them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from service.pgwire.outbox import Outbox
from service.pgwire.portal import Portal
from service.pgwire.settings import Settings

R = TypeVar("R")


class Channel(Protocol):
    """One client connection as the statement runners see it."""

    writer: Outbox  # write() collects, drain() sends
    session: Any  # service.pgwire.backend.Session
    settings: Settings
    portals: dict[str, Portal]
    status: bytes  # b"I" idle, b"T" in a transaction block, b"E" in a failed one
    streaming: Portal | None  # the portal whose half-read stream holds the session
    default_timeout_s: float | None
    context: dict[str, Any]  # session markers' values (user, pid, schema): sqlglot expressions

    async def call(self, fn: Callable[..., R], *args: Any) -> R:
        """`fn(*args)` on the connection's own thread (DuckDB work)."""
        ...

    async def call_aside(self, fn: Callable[..., R], *args: Any) -> R:
        """`fn(*args)` on a shared pool (encoding ahead while earlier bytes go out)."""
        ...

    def report(self, name: str) -> None:
        """Send a ParameterStatus for setting `name` if clients are told of it."""
        ...

    def release_session(self) -> None:
        """Park any half-read stream in memory before the session runs something else."""
        ...

    def drop_portal(self, name: str) -> None: ...
