"""One client connection: the protocol state machine after startup.

Simple query ('Q') and the extended protocol (Parse/Bind/Describe/Execute/Sync/Close/Flush) share
`_run_portal`. Transaction state follows PostgreSQL: 'I' idle, 'T' in a block, 'E' failed block
(everything but COMMIT/ROLLBACK refused with 25P02 until it ends). After an error in the extended
protocol, messages are skipped until Sync. SQL cursors (DECLARE/FETCH/MOVE/CLOSE, what psycopg's
named cursors send) are portals too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from sqlglot import exp

from service.pgwire import codec, cursors, params
from service.pgwire import types as t
from service.pgwire.catalogued import Catalogued
from service.pgwire.compat import paths
from service.pgwire.errors import SqlError
from service.pgwire.outbox import Outbox
from service.pgwire.portal import Portal, Prepared, command_tag
from service.pgwire.settings import REPORTED, Settings
from service.pgwire.statements import Statement, split
from service.serve.pgerror import pg_error
from warehouse.query import search_path

R = TypeVar("R")

#: Messages after which the client waits for what was answered (the others' answers wait for
#: Sync or Flush, as PostgreSQL's do).
_ANSWERED_NOW = frozenset({b"Q", b"S", b"H"})


class Connection:
    """Protocol state of one authenticated client."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        session: Any,
        settings: Settings,
        run_blocking: Callable[..., Any],
        timeout_s: float | None = None,
        pid: int = 0,
        run_aside: Callable[..., Any] | None = None,
    ) -> None:
        self.reader, self.session = reader, session
        self.writer = Outbox(writer)  # sent at Sync, Flush, a simple query's end, an error
        self.settings = settings
        self.blocking = run_blocking
        self.aside = run_aside or run_blocking  # work that may overlap with writing
        self.default_timeout_s = timeout_s
        self.prepared: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.status = b"I"
        self.skip_to_sync = False
        self.streaming: Portal | None = None  # the portal whose stream holds the session
        self.catalogued = Catalogued()
        # the client's text of what runs now and where its statement starts: an error's position
        self.source: tuple[str, int] = ("", 0)
        user = getattr(getattr(session, "user", None), "name", "") or settings.get(
            "session_authorization"
        )
        self.context: dict[str, exp.Expr] = {
            "wanka_session_user": exp.Literal.string(user or ""),
            "wanka_backend_pid": exp.Literal.number(pid),
            **paths.DEFAULT_CONTEXT,
        }

    async def call(self, fn: Callable[..., R], *args: Any) -> R:
        result: R = await self.blocking(fn, *args)
        return result

    async def call_aside(self, fn: Callable[..., R], *args: Any) -> R:
        """Like `call`, on another thread: for encoding ahead while earlier bytes go out."""
        result: R = await self.aside(fn, *args)
        return result

    # -- loop ------------------------------------------------------------------------------

    async def serve(self) -> None:
        handlers = {
            b"Q": self.simple_query,
            b"P": self.parse,
            b"B": self.bind,
            b"D": self.describe,
            b"E": self.execute,
            b"C": self.close,
            b"S": self.sync,
            b"H": self.flush,
        }
        while True:
            kind, body = await codec.read_message(self.reader)
            if kind == b"X":
                return
            handler = handlers.get(kind)
            if handler is None:
                if kind in (b"d", b"c", b"f"):
                    continue  # stray COPY-in data: COPY FROM STDIN is not offered
                self.writer.write(codec.error_response("08P01", f"unexpected message {kind!r}"))
                await self.writer.drain()
                continue
            if self.skip_to_sync and kind not in (b"S", b"Q"):
                continue
            try:
                await handler(codec.Payload(body))
            except Exception as error:  # anything raised is the client's error response
                self.fail(error)
                if kind == b"Q":
                    self.writer.write(codec.ready_for_query(self.status))
                else:
                    self.skip_to_sync = True
            if kind in _ANSWERED_NOW or self.skip_to_sync:
                await self.writer.drain()

    def fail(self, error: BaseException) -> None:
        if self.status == b"T":
            self.status = b"E"
        said = pg_error(error, *self.source)
        self.writer.write(codec.error_response(said.code, said.message, **said.fields()))

    # -- simple query ----------------------------------------------------------------------

    async def simple_query(self, payload: codec.Payload) -> None:
        sql = payload.cstring()
        statements = split(sql)
        if not statements:
            self.writer.write(codec.EMPTY_QUERY)
        at = 0
        for statement in statements:
            at = max(sql.find(statement.text, at), 0)
            self.source = (sql, at)
            at += len(statement.text)
            portal = await self.bind_portal(statement, [], ())
            await self.start(portal)
            if (portal.schema is not None and portal.statement.returns_rows) or _has_rows(portal):
                self.writer.write(portal.description())
            await self.stream(portal, 0)
        self.writer.write(codec.ready_for_query(self.status))

    # -- extended protocol -----------------------------------------------------------------

    async def parse(self, payload: codec.Payload) -> None:
        name, sql = payload.cstring(), payload.cstring()
        oids = [payload.int32() for _ in range(payload.int16())]
        statements = split(sql)
        if len(statements) > 1:
            raise SqlError("42601", "cannot insert multiple commands into a prepared statement")
        statement = statements[0] if statements else Statement("", "noop", "")
        path = self.search_path()
        if self.catalogued.needed(statement, path):  # Describe then sees what Bind will run
            statement = await self.call(self.catalogued.prepare, self, statement, path)
        if name and name in self.prepared:
            raise SqlError("42P05", f'prepared statement "{name}" already exists')
        self.prepared[name] = Prepared(statement, oids)
        self.writer.write(codec.PARSE_COMPLETE)

    async def bind(self, payload: codec.Payload) -> None:
        portal_name, name = payload.cstring(), payload.cstring()
        formats = payload.int16s()
        raw = []
        for _ in range(payload.int16()):
            size = payload.int32()
            raw.append(None if size < 0 else payload.take(size))
        result_formats = payload.int16s()
        prepared = self._prepared(name)
        types = prepared.param_types()
        if len(formats) == 1:
            formats = formats * len(raw)
        values = [
            params.literal(v, types[i] if i < len(types) else t.TEXT, bool(formats and formats[i]))
            for i, v in enumerate(raw)
        ]
        if portal_name in self.portals and portal_name:
            raise SqlError("42P03", f'cursor "{portal_name}" already exists')
        self.drop_portal(portal_name)
        portal = await self.bind_portal(prepared.statement, values, result_formats)
        self.portals[portal_name] = portal
        self.writer.write(codec.BIND_COMPLETE)

    async def describe(self, payload: codec.Payload) -> None:
        what, name = payload.byte(), payload.cstring()
        if what == b"S":
            prepared = self._prepared(name)
            self.writer.write(codec.parameter_description(prepared.param_types()))
            schema = await self.call(cursors.describe_statement, self, prepared)
            if schema is None:
                self.writer.write(codec.NO_DATA)
            else:
                probe = Portal(prepared.statement, "")
                probe.schema = schema
                self.writer.write(probe.description())
            return
        portal = self._portal(name)
        await self.start(portal)
        if _has_rows(portal):
            self.writer.write(portal.description())
        else:
            self.writer.write(codec.NO_DATA)

    async def execute(self, payload: codec.Payload) -> None:
        name, max_rows = payload.cstring(), payload.int32()
        portal = self._portal(name)
        if portal.statement.kind == "noop" and not portal.statement.text:
            self.writer.write(codec.EMPTY_QUERY)
            return
        await self.start(portal)
        await self.stream(portal, max_rows)

    async def close(self, payload: codec.Payload) -> None:
        what, name = payload.byte(), payload.cstring()
        if what == b"S":
            self.prepared.pop(name, None)
        else:
            self.drop_portal(name)
        self.writer.write(codec.CLOSE_COMPLETE)

    async def sync(self, payload: codec.Payload) -> None:
        self.skip_to_sync = False
        if self.status == b"I":
            self.drop_portal("")
        self.writer.write(codec.ready_for_query(self.status))

    async def flush(self, payload: codec.Payload) -> None:
        await self.writer.drain()

    # -- running ---------------------------------------------------------------------------

    async def bind_portal(self, statement: Statement, values: list[Any], formats: Any) -> Portal:
        if self.status == b"E" and statement.kind not in ("commit", "rollback"):
            raise SqlError(
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            )
        path = self.search_path()
        if path == search_path.DEFAULT:
            self.context.update(paths.DEFAULT_CONTEXT)
        if statement.kind == "ddl":
            self.catalogued.forget()
        if self.catalogued.needed(statement, path):
            statement = await self.call(self.catalogued.prepare, self, statement, path)
        sql = (
            statement.render(values, self.context) if statement.tree is not None else statement.text
        )
        return Portal(statement, sql, formats)

    def search_path(self) -> tuple[str, ...]:
        return search_path.parse_path(self.settings.get("search_path") or "")

    async def start(self, portal: Portal) -> None:
        """Run the portal's statement unless it already runs."""
        if portal.schema is not None or portal.exhausted:
            return
        await cursors.start(self, portal)

    async def stream(self, portal: Portal, max_rows: int) -> None:
        """Send rows (up to `max_rows`), then CommandComplete or PortalSuspended."""
        if _has_rows(portal) or portal.statement.copy is not None:
            await cursors.send_rows(self, portal, max_rows)
            if not portal.exhausted:
                self.writer.write(codec.PORTAL_SUSPENDED)
                return
        elif portal.result is not None:
            await self.call(portal.materialize)
        tag = portal.tag or command_tag(portal.statement, portal.result, portal.rows_sent)
        self.writer.write(codec.command_complete(tag))

    def report(self, name: str) -> None:
        if name in REPORTED:
            value = self.settings.get(name) or ""
            self.writer.write(codec.parameter_status(name, value))

    def release_session(self) -> None:
        """Before the session runs anything else, park any half-read stream in memory."""
        if self.streaming is not None:
            self.streaming.materialize()
            self.streaming = None

    def _prepared(self, name: str) -> Prepared:
        """The prepared statement a message names; its text is where an error points."""
        if name not in self.prepared:
            raise SqlError("26000", f'prepared statement "{name}" does not exist')
        self.source = (self.prepared[name].statement.text, 0)
        return self.prepared[name]

    def _portal(self, name: str) -> Portal:
        """The portal a message names; its statement's text is where an error points."""
        if name not in self.portals:
            raise SqlError("34000", f'portal "{name}" does not exist')
        self.source = (self.portals[name].statement.text, 0)
        return self.portals[name]

    def drop_portal(self, name: str) -> None:
        portal = self.portals.pop(name, None)
        if portal is not None:
            if self.streaming is portal:
                self.streaming = None
            portal.close()


def _has_rows(portal: Portal) -> bool:
    if portal.schema is None or not len(portal.schema):
        return False
    return portal.statement.returns_rows or portal.statement.kind == "other"
