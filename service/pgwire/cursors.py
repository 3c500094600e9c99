"""Running a portal's statement: session commands, transaction control, SQL cursors, queries, COPY.

Everything here runs on the connection's task; DuckDB work goes through `conn.call` (inline on
the connection's own thread) and encoding of large batches through `conn.call_aside` (a shared
pool), so the next batch is encoded while the last one is on the wire.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import replace

import pyarrow as pa
from sqlglot import exp

from service.pgwire import codec, copyout, explain, explaining, params
from service.pgwire import types as t
from service.pgwire.channel import Channel
from service.pgwire.errors import SqlError
from service.pgwire.portal import Portal, Prepared
from service.pgwire.rows import data_rows
from service.pgwire.settings import SessionCommand


def _text_table(names: list[str], rows: list[list[str]]) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    schema = pa.schema([(n, pa.string()) for n in names])
    columns = [pa.array([r[i] for r in rows], pa.string()) for i in range(len(names))]
    return schema, [pa.record_batch(columns, schema=schema)]


async def start(conn: Channel, portal: Portal) -> None:
    """Run the statement behind `portal` (rows, if any, are read later by `send_rows`)."""
    statement = portal.statement
    kind = statement.kind
    portal.tag = statement.tag
    if kind in ("set", "reset", "show") and statement.command is not None:
        _setting(conn, portal, statement.command)
    elif kind in ("begin", "commit", "rollback"):
        await _transaction(conn, kind, portal)
    elif kind == "declare":
        _declare(conn, portal)
    elif kind in ("fetch", "move"):
        await _fetch(conn, portal)
    elif kind == "closecursor":
        _close_cursor(conn, statement.cursor or "")
    elif kind == "explain":
        await conn.call(explaining.run, conn, portal, _timeout_s(conn))
    elif kind != "noop":
        await conn.call(run_statement, conn, portal)
    if portal.schema is None:
        portal.schema = pa.schema([])
        portal.exhausted = portal.result is None


def _setting(conn: Channel, portal: Portal, command: SessionCommand) -> None:
    """SET, RESET and SHOW of a client setting: the session keeps them, DuckDB never sees them."""
    if command.verb == "set":
        conn.report(conn.settings.set(command.name, command.value))
    elif command.verb == "reset":
        conn.settings.reset(command.name)
    elif command.name == "all":
        rows = [[k, v, ""] for k, v in sorted(conn.settings.values.items())]
        portal.schema, portal.pending = _text_table(["name", "setting", "description"], rows)
        portal.oids = [t.TEXT] * len(portal.schema)
    else:
        value = conn.settings.get(command.name)
        if value is None:
            raise _error("42704", f'unrecognized configuration parameter "{command.name}"')
        portal.schema, portal.pending = _text_table([command.name], [[value]])  # TimeZone
        portal.oids = [t.TEXT] * len(portal.schema)


def _close_cursor(conn: Channel, name: str) -> None:
    if name.lower() == "all":
        for key in [k for k in conn.portals if k]:
            conn.drop_portal(key)
    elif name not in conn.portals:
        raise _error("34000", f'cursor "{name}" does not exist')
    else:
        conn.drop_portal(name)


def _error(code: str, text: str) -> Exception:
    return SqlError(code, text)


def run_statement(conn: Channel, portal: Portal) -> None:
    """Run SQL on the session (blocking)."""
    conn.release_session()
    with conn.session.turn():  # the statement and its first batches: see service/serve/gate.py
        portal.attach(conn.session.run(portal.sql, timeout_s=_timeout_s(conn)))
        if (
            portal.statement.copy is None
            and portal.statement.kind in ("dml", "ddl")
            and not portal.statement.returns_rows
        ):
            portal.materialize()
            _rowcount_from_count_column(portal)
            portal.schema = pa.schema([])
            return
        if portal.statement.returns_rows and portal.statement.copy is None:
            portal.prefetch()  # small results are then answered without another thread hop
    if not portal.exhausted:
        conn.streaming = portal


def _timeout_s(conn: Channel) -> float | None:
    timeout_ms = int((conn.settings.get("statement_timeout") or "0").rstrip("ms") or 0)
    return timeout_ms / 1000 if timeout_ms > 0 else conn.default_timeout_s


def _rowcount_from_count_column(portal: Portal) -> None:
    """DuckDB answers DML with one 'Count' row; use it when the session gave no rowcount."""
    first = portal.pending[0] if portal.pending else None
    counted = portal.statement.tag in ("INSERT 0", "UPDATE", "DELETE", "MERGE")
    if first is not None and first.num_columns == 1 and first.num_rows == 1 and counted:
        value = first.column(0)[0].as_py()
        if isinstance(value, int):
            portal.tag = f"{portal.statement.tag} {value}"
    portal.pending.clear()
    portal.exhausted = True


async def _transaction(conn: Channel, kind: str, portal: Portal) -> None:
    if kind == "begin":
        if conn.status != b"I":
            conn.writer.write(
                codec.notice_response("25001", "there is already a transaction in progress")
            )
            return
        await conn.call(_run_plain, conn, "BEGIN TRANSACTION")
        conn.status = b"T"
        return
    if conn.status == b"I":
        conn.writer.write(codec.notice_response("25P01", "there is no transaction in progress"))
        return
    for name in [k for k in conn.portals if k]:
        conn.drop_portal(name)  # cursors end with their transaction
    failed = conn.status == b"E"
    conn.status = b"I"
    if failed:
        portal.tag = "ROLLBACK"
    await conn.call(_run_plain, conn, "ROLLBACK" if failed or kind == "rollback" else "COMMIT")


def _run_plain(conn: Channel, sql: str) -> None:
    conn.release_session()
    result = conn.session.run(sql)
    reader = getattr(result, "reader", None)
    if reader is not None:
        reader.read_all()


def _declare(conn: Channel, portal: Portal) -> None:
    name = portal.statement.cursor or ""
    if name in conn.portals:
        raise _error("42P03", f'cursor "{name}" already exists')
    query = replace(portal.statement, kind="query", tag="SELECT", cursor=None)
    inner = Portal(query, portal.sql, [1] if portal.statement.binary else [0])
    conn.portals[name] = inner


async def _fetch(conn: Channel, portal: Portal) -> None:
    name = portal.statement.cursor or ""
    if name not in conn.portals:
        raise _error("34000", f'cursor "{name}" does not exist')
    source = conn.portals[name]
    if source.schema is None and not source.exhausted:
        await conn.call(run_statement, conn, source)
    portal.source = source
    portal.schema = source.schema if portal.statement.kind == "fetch" else pa.schema([])
    portal.oids = source.oids
    portal.fetch_count = portal.statement.count
    if portal.statement.kind == "move":
        _, moved = await conn.call(source.fetch, portal.fetch_count, None, False)
        portal.tag = f"MOVE {moved}"
        portal.exhausted = True
    elif not portal.formats and source.formats:
        portal.formats = source.formats


async def send_rows(conn: Channel, portal: Portal, max_rows: int) -> None:
    """Write DataRows (or COPY data) for up to `max_rows` rows."""
    if portal.statement.copy is not None:
        count = await copyout.send(conn, portal)
        portal.tag = f"COPY {count}"
        return
    if portal.source is not None:  # FETCH n FROM cursor
        buffers, count = await conn.call(
            portal.source.fetch, portal.fetch_count, portal.column_formats()
        )
        for buffer in buffers:
            conn.writer.write(memoryview(buffer))
        portal.tag = f"FETCH {count}"
        portal.exhausted = True
        return
    if max_rows > 0:
        buffers, _ = await conn.call(portal.fetch, max_rows)
        for buffer in buffers:
            conn.writer.write(memoryview(buffer))
    else:
        await _send_all(conn, portal)
    if portal.exhausted and conn.streaming is portal:
        conn.streaming = None
    if portal.exhausted and portal.statement.kind != "explain":  # PostgreSQL's tag: EXPLAIN
        portal.tag = (
            f"SELECT {portal.rows_sent}"
            if portal.statement.kind in ("query", "show", "other", "declare")
            or portal.statement.returns_rows
            else portal.tag
        )


#: batches encoded at once while earlier ones are on the wire: the client mostly waits for bytes
#: while a result arrives, so a second core encodes instead of idling
ENCODE_AHEAD = 2
INLINE_ROWS = 256


async def _send_all(conn: Channel, portal: Portal) -> None:
    """Every remaining row: batches read in order, encoded in parallel, written in order."""
    formats = portal.column_formats()
    ahead: deque[asyncio.Future[list[pa.Buffer]]] = deque()
    exhausted = False
    while True:
        while not exhausted and len(ahead) < ENCODE_AHEAD:
            batch = portal.next_batch() if portal.ready() else await conn.call(portal.next_batch)
            if batch is None:
                exhausted = True
                break
            portal.rows_sent += batch.num_rows
            if batch.num_rows <= INLINE_ROWS:  # cheaper than a hop to a worker thread
                done: asyncio.Future[list[pa.Buffer]] = asyncio.get_running_loop().create_future()
                done.set_result(data_rows(batch, portal.oids, formats))
                ahead.append(done)
            else:
                ahead.append(
                    asyncio.ensure_future(conn.call_aside(data_rows, batch, portal.oids, formats))
                )
        if not ahead:
            break
        for buffer in await ahead.popleft():
            conn.writer.write(memoryview(buffer))
        await conn.writer.drain()
    portal.exhausted = True


def describe_statement(conn: Channel, prepared: Prepared) -> pa.Schema | None:
    """The result columns of a prepared statement without running it for real (blocking)."""
    statement = prepared.statement
    if statement.kind == "show":
        name = statement.command.name if statement.command else ""
        return pa.schema([(name, pa.string())] if name != "all" else [])
    if statement.explain is not None:
        return explain.schema(explain.chosen_format(statement.explain, conn.settings))
    if statement.kind == "fetch":
        source = conn.portals.get(statement.cursor or "")
        if source is not None and source.schema is None:
            run_statement(conn, source)
        return source.schema if source is not None else None
    if statement.tree is None or not isinstance(statement.tree, exp.Query):
        return None
    nulls = [params.literal(None, oid, False) for oid in prepared.param_types()]
    probe = exp.select("*").from_(statement.tree.copy().subquery("_describe")).limit(0)
    sql = type(statement)(statement.text, "query", "SELECT", probe, param_count=len(nulls)).render(
        nulls, conn.context
    )
    conn.release_session()
    result = conn.session.run(sql)
    schema: pa.Schema = result.reader.schema
    result.reader.read_all()
    return schema
