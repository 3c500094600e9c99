"""The asyncio server: accept, start up, authenticate, hand over to `Connection`.

The event loop runs in a daemon thread; DuckDB work runs in a thread pool (one `Session` per
connection), so one slow query never stalls other clients. Cancel requests find their
connection by (process id, secret) and interrupt its session.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import ipaddress
import logging
import secrets
import ssl
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from service.pgwire import backend, codec, compat
from service.pgwire.connection import Connection
from service.pgwire.settings import REPORTED, Settings
from service.pgwire.startup import Rejected, authenticate, negotiate

log = logging.getLogger("wanka.pgwire")
R = TypeVar("R")
WRITE_BUFFER_BYTES = 16 << 20
LOCAL_NOTICE = (
    "no wanka users exist: local connections run as admin without a password until "
    "`wanka user add` creates one"
)


class PgServer:
    """Serves one wanka `Server` over the PostgreSQL protocol."""

    def __init__(
        self,
        server: Any,
        *,
        tls: ssl.SSLContext | None = None,
        timeout_s: float | None = None,
        workers: int = 64,
    ) -> None:
        self.server = server
        self.tls = tls
        self.timeout_s = timeout_s
        self.pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="pgwire")
        self.active: dict[int, tuple[int, Any]] = {}  # pid -> (secret, session)
        self._next_pid = 1000
        self._lock = threading.Lock()
        self._per_user: collections.Counter[str] = collections.Counter()

    async def blocking(self, fn: Callable[..., R], *args: Any) -> R:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, functools.partial(fn, *args))

    def cancel(self, pid: int, secret: int) -> None:
        entry = self.active.get(pid)
        if entry is not None and secrets.compare_digest(
            entry[0].to_bytes(4, "big", signed=True), secret.to_bytes(4, "big", signed=True)
        ):
            entry[1].interrupt()

    async def _open_locally(self, writer: asyncio.StreamWriter) -> bool:
        """Like HTTP: a server with no users lets loopback clients in as admin."""
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) and peer else ""
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
        any_users = getattr(self.server, "any_users", None)
        return loopback and callable(any_users) and not await self.blocking(any_users)

    async def _log_in(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[Any, Any]:
        """Startup, then SCRAM (or the local admin of a server without users), throttled."""
        hello = await negotiate(reader, writer, self.tls, self.cancel)
        if await self._open_locally(writer):
            writer.write(codec.authentication(0) + codec.notice_response("01000", LOCAL_NOTICE))
            return hello, backend.local_admin(hello.user)
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        throttle = getattr(self.server, "auth_throttle", None)
        if throttle is not None and (wait_s := throttle.wait_s(address)):
            message = f"too many failed logins from {address}: try again in {wait_s:.0f} s"
            raise Rejected(codec.error_response("28000", message, severity="FATAL"))
        try:
            secret = await authenticate(
                reader,
                writer,
                hello.user,
                lambda name: self.blocking(backend.scram_secret, self.server, name),
            )
        except Rejected:
            if throttle is not None:
                throttle.failed(address, hello.user, "pgwire")
            raise
        if throttle is not None:
            throttle.succeeded(address)
        return hello, backend.user_of(secret)

    def _admit(self, name: str, limits: Any) -> str:
        """Count a connection of user `name`; refuse one past the per-user limit."""
        most = getattr(limits, "max_connections_per_user", None)
        with self._lock:
            if most is not None and self._per_user[name] >= most:
                raise Rejected(
                    codec.error_response(
                        "53300", f"too many connections for user {name} (at most {most})", "FATAL"
                    )
                )
            self._per_user[name] += 1
        return name

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = None
        pid = 0
        # a deep write buffer lets the next batch be encoded while the last one is on the wire
        writer.transport.set_write_buffer_limits(high=WRITE_BUFFER_BYTES)
        user_name = None
        try:
            limits = getattr(self.server, "limits", None)
            startup_s = getattr(limits, "startup_timeout_s", 30.0)
            try:  # a client that dribbles its startup bytes (slowloris) is dropped
                hello, user = await asyncio.wait_for(self._log_in(reader, writer), startup_s)
            except TimeoutError:
                raise Rejected(
                    codec.error_response(
                        "08P01", f"startup and login took more than {startup_s:g} s", "FATAL"
                    )
                ) from None
            user_name = self._admit(user.name, limits)
            session = await self.blocking(self.server.session, user)
            if hasattr(session, "max_rows"):
                session.max_rows = None  # row caps are for HTTP; time and memory limits stay
            with self._lock:
                self._next_pid += 1
                pid = self._next_pid
            key = secrets.randbits(31)
            self.active[pid] = (key, session)
            settings = Settings()
            settings.set("application_name", hello.parameters.get("application_name", ""))
            settings.set("session_authorization", hello.user)
            for name, value in hello.parameters.items():
                if name not in ("user", "database", "options", "replication"):
                    settings.set(name, value)
            writer.write(
                b"".join(codec.parameter_status(n, settings.get(n) or "") for n in REPORTED)
                + codec.backend_key_data(pid, key)
                + codec.ready_for_query(b"I")
            )
            await writer.drain()
            connection = Connection(
                reader, writer, session, settings, self.blocking, self.timeout_s, pid
            )
            await connection.serve()
        except Rejected as rejected:
            if rejected.reply:
                writer.write(rejected.reply)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, asyncio.CancelledError):
            pass
        except codec.ProtocolViolation as error:
            writer.write(codec.error_response("08P01", str(error), severity="FATAL"))
        except Exception as error:  # last resort: tell the client, keep the server up
            log.exception("pgwire connection failed")
            writer.write(codec.error_response("XX000", str(error), severity="FATAL"))
        finally:
            if user_name is not None:
                with self._lock:
                    self._per_user[user_name] -= 1
            self.active.pop(pid, None)
            if session is not None:
                with contextlib.suppress(RuntimeError):  # the pool is gone at shutdown
                    self.pool.submit(session.close)
            with contextlib.suppress(Exception):
                writer.close()


class Handle:
    """A running pgwire endpoint: `.port`, `.stop()`."""

    def __init__(self, pg: PgServer, host: str, port: int) -> None:
        self.pg = pg
        self.host = host
        self.port = port
        self.loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="pgwire", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self._server = self.loop.run_until_complete(
                asyncio.start_server(self.pg.handle, self.host, self.port, limit=1 << 20)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as error:
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> Handle:
        self.thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        """Stop accepting, end open connections, close the worker pool."""
        if self.loop.is_closed() or not self.thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop)
        with contextlib.suppress(Exception):
            future.result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.pg.pool.shutdown(wait=False, cancel_futures=True)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def start(
    server: Any,
    host: str,
    port: int,
    *,
    tls: ssl.SSLContext | None = None,
    timeout_s: float | None = None,
) -> Handle:
    """Serve `server` over the PostgreSQL protocol on host:port (0: a free port) in a thread."""
    cur = backend.compat_cursor(server)
    if cur is not None:
        try:
            compat.install(cur)
        finally:
            cur.close()
    return Handle(PgServer(server, tls=tls, timeout_s=timeout_s), host, port).start()
