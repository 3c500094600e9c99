"""The PostgreSQL server: accept, start up, authenticate, hand over to `Connection`.

Like PostgreSQL's process per backend, each connection gets a thread of its own running its own
small event loop, and its DuckDB work runs inline on that thread (one `Session` per connection).
One slow query never stalls other clients, and no connection waits on a shared loop: with one
loop for every client, each query's steps queued behind the GIL on that single thread, and
under mixed load pgwire clients got a fifth of what HTTP clients did. Large result batches are
encoded ahead on a small shared pool, overlapping the socket. Cancel requests find their
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
import selectors
import socket
import ssl
import threading
import time
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
        encoders: int = 4,
    ) -> None:
        self.server = server
        self.tls = tls
        self.timeout_s = timeout_s
        # only for encoding large result batches ahead; everything else runs on the connection
        self.pool = concurrent.futures.ThreadPoolExecutor(encoders, thread_name_prefix="pgwire-enc")
        self.active: dict[int, tuple[int, Any]] = {}  # pid -> (secret, session)
        self._next_pid = 1000
        self._lock = threading.Lock()
        self._per_user: collections.Counter[str] = collections.Counter()

    async def blocking(self, fn: Callable[..., R], *args: Any) -> R:
        """Run `fn` on this connection's own thread: its loop serves no one else."""
        return fn(*args)

    async def in_pool(self, fn: Callable[..., R], *args: Any) -> R:
        """Run `fn` on the shared encoder pool, so the connection can write meanwhile."""
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

    async def refuse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, why: str
    ) -> None:
        """Answer a connection the server has no room for, as PostgreSQL does (53300)."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(negotiate(reader, writer, self.tls, self.cancel), 2.0)
        with contextlib.suppress(Exception):
            writer.write(codec.error_response("53300", f"sorry, {why}", severity="FATAL"))
            await writer.drain()
            writer.close()

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
            session = await self.blocking(
                functools.partial(self.server.session, user, face="pgwire")
            )
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
                reader, writer, session, settings, self.blocking, self.timeout_s, pid, self.in_pool
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
                with contextlib.suppress(Exception):
                    session.close()
            with contextlib.suppress(Exception):
                writer.close()


class Handle:
    """A running pgwire endpoint: `.port`, `.stop()`.

    One thread accepts; each accepted connection runs `PgServer.handle` on a thread and event
    loop of its own.
    """

    def __init__(self, pg: PgServer, host: str, port: int) -> None:
        self.pg = pg
        self.host = host
        self.port = port
        self.listeners: list[socket.socket] = []
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._open: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]] = {}
        self._threads: set[threading.Thread] = set()
        self.thread = threading.Thread(target=self._accept, name="pgwire", daemon=True)

    def _listen(self) -> None:
        """Bind every address `host` names (like asyncio.start_server), all on one port."""
        infos = socket.getaddrinfo(
            self.host or None, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        seen, failure = set(), None
        for family, kind, proto, _, address in infos:
            if (family, address[0]) in seen:
                continue
            seen.add((family, address[0]))
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                port = self.listeners[0].getsockname()[1] if self.listeners else address[1]
                sock.bind((address[0], port, *address[2:]))
                sock.listen(512)
            except OSError as error:
                sock.close()
                failure = failure or error
                continue
            sock.setblocking(False)
            self.listeners.append(sock)
        if not self.listeners:
            raise failure or OSError(f"cannot listen on {self.host}:{self.port}")
        self.port = self.listeners[0].getsockname()[1]

    def _accept(self) -> None:
        with selectors.DefaultSelector() as selector:
            for sock in self.listeners:
                selector.register(sock, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select(timeout=0.2):
                    try:
                        client, _ = key.fileobj.accept()  # type: ignore[union-attr]
                    except OSError:
                        continue
                    client.setblocking(False)
                    thread = threading.Thread(
                        target=self._serve_one, args=(client,), name="pgwire-conn", daemon=True
                    )
                    with self._lock:
                        self._threads.add(thread)
                    thread.start()

    def _serve_one(self, client: socket.socket) -> None:
        loop = _new_loop()
        try:
            loop.run_until_complete(self._connection(client, loop))
        except Exception:  # the connection's own errors are answered inside handle()
            log.exception("pgwire connection thread failed")
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            client.close()
            with self._lock:
                self._threads.discard(threading.current_thread())

    async def _connection(self, client: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        task = asyncio.current_task()
        assert task is not None
        key = id(task)
        limits = getattr(self.pg.server, "limits", None)
        most = getattr(limits, "max_connections", None)
        with self._lock:
            if self._stopping.is_set():
                return
            full = most is not None and len(self._open) >= most
            if not full:
                self._open[key] = (loop, task)
        try:
            reader, writer = await _server_streams(loop, client)
            try:
                if full:
                    await self.pg.refuse(
                        reader, writer, f"too many clients already (at most {most})"
                    )
                else:
                    await self.pg.handle(reader, writer)
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), 1)
        except asyncio.CancelledError:
            pass
        finally:
            with self._lock:
                self._open.pop(key, None)

    def start(self) -> Handle:
        self._listen()
        self.thread.start()
        return self

    def stop(self, grace_s: float = 0.0) -> None:
        """Stop accepting, wait up to `grace_s` for the statements running, then end the open
        connections (interrupting what still runs) and close the encoder pool. Safe to call
        from several threads: the later calls wait for the first."""
        with self._lock:
            first = not self._stopping.is_set()
            self._stopping.set()
        if not first:
            self._stopped.wait(timeout=grace_s + 10)
            return
        self.thread.join(timeout=5)
        for sock in self.listeners:
            with contextlib.suppress(OSError):
                sock.close()
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(
            getattr(session, "running", False) for _, session in list(self.pg.active.values())
        ):
            time.sleep(0.05)
        with self._lock:
            open_now = list(self._open.values())
            threads = list(self._threads)
        for loop, task in open_now:
            with contextlib.suppress(RuntimeError):  # its loop just finished
                loop.call_soon_threadsafe(task.cancel)
        for _, session in list(self.pg.active.values()):
            session.interrupt()  # a statement running inline ends now, not when it is done
        deadline = time.monotonic() + 5
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.pg.pool.shutdown(wait=False, cancel_futures=True)
        self._stopped.set()


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where it is installed (its transports are C: a query's writes cost less), else
    asyncio's own loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def _server_streams(
    loop: asyncio.AbstractEventLoop, client: socket.socket
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams over an accepted socket, marked server-side (what `start_tls` goes by)."""
    ready: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = loop.create_future()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_accepted_socket(
        lambda: asyncio.StreamReaderProtocol(reader, lambda r, w: ready.set_result((r, w))), client
    )
    return await ready


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
