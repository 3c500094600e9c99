"""Portals: a bound statement and the result stream it reads from, row limits included.

The blocking parts (DuckDB's reader, encoding) run in worker threads; a portal is only touched
by its connection's task, one call at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from service.pgwire import codec
from service.pgwire import types as t
from service.pgwire.rows import data_rows
from service.pgwire.statements import Statement


@dataclass
class Prepared:
    """A parsed statement (Parse): the statement and the parameter types the client gave."""

    statement: Statement
    param_oids: list[int]

    def param_types(self) -> list[int]:
        count = max(self.statement.param_count, len(self.param_oids))
        given = self.param_oids + [0] * (count - len(self.param_oids))
        return [oid or t.TEXT for oid in given]


@dataclass
class Portal:
    """A statement bound to parameters, possibly half read."""

    statement: Statement
    sql: str
    formats: Sequence[int] = ()
    result: Any = None
    pending: list[pa.RecordBatch] = field(default_factory=list)
    oids: list[int] = field(default_factory=list)
    schema: pa.Schema | None = None
    rows_sent: int = 0
    exhausted: bool = False
    tag: str = ""
    reader_done: bool = False  # DuckDB's stream is finished; `pending` may still hold rows
    source: Portal | None = None  # FETCH: the cursor's portal
    fetch_count: int = 0

    def attach(self, result: Any) -> None:
        """Take the result of running the statement."""
        self.result = result
        self.schema = result.reader.schema
        self.oids = [pg.oid for pg in self.column_types()]

    def column_types(self) -> list[t.PgType]:
        """Each result column's PostgreSQL type: its Arrow type's, or the one the statement
        declares for it (a catalog column of type name or "char", which DuckDB has as text)."""
        assert self.schema is not None
        declared = (self.source or self).statement.declared  # FETCH: the cursor's query
        if len(declared) != len(self.schema):
            declared = (0,) * len(self.schema)
        return [
            t.declared(oid) if oid and t.is_text(f.type) else t.pg_type(f.type)
            for f, oid in zip(self.schema, declared, strict=True)
        ]

    def column_formats(self) -> list[int]:
        count = len(self.schema) if self.schema is not None else 0
        if not self.formats:
            return [0] * count
        if len(self.formats) == 1:
            return [self.formats[0]] * count
        return list(self.formats)

    def description(self) -> bytes:
        """RowDescription for the result, with the formats the client asked for."""
        assert self.schema is not None
        fields = []
        for arrow, pg, fmt in zip(
            self.schema, self.column_types(), self.column_formats(), strict=False
        ):
            fields.append(codec.Field(arrow.name, pg.oid, pg.size, pg.modifier, fmt))
        return codec.row_description(fields)

    def fetch(
        self, max_rows: int = 0, formats: list[int] | None = None, send: bool = True
    ) -> tuple[list[pa.Buffer], int]:
        """Up to `max_rows` (0: all) DataRow messages; blocking. Sets `exhausted` at the end."""
        out: list[pa.Buffer] = []
        count = 0
        formats = formats if formats is not None else self.column_formats()
        while max_rows <= 0 or count < max_rows:
            batch = self._next_batch()
            if batch is None:
                self.exhausted = True
                break
            if max_rows > 0 and batch.num_rows > max_rows - count:
                keep = max_rows - count
                self.pending.insert(0, batch.slice(keep))
                batch = batch.slice(0, keep)
            if send:
                out.extend(data_rows(batch, self.oids, formats))
            count += batch.num_rows
        if max_rows > 0 and count == max_rows and not self.pending:
            self._peek()
        self.rows_sent += count
        return out, count

    def prefetch(self) -> None:
        """Read the first batch, and whether it is the last, while the statement's thread runs."""
        if self.pending or self.exhausted:
            return
        self._peek()
        if self.pending and not self.exhausted:
            first = self.pending.pop(0)
            self._peek()
            self.pending.insert(0, first)
        if self.exhausted and self.pending:  # rows remain to send: only the reader is done
            self.exhausted = False
            self.reader_done = True

    def ready(self) -> bool:
        """Whether `next_batch` answers without touching DuckDB."""
        return bool(self.pending) or self.exhausted or self.reader_done or self.result is None

    def next_batch(self) -> pa.RecordBatch | None:
        """The next batch of the result (blocking), None at the end."""
        return self._next_batch()

    def _next_batch(self) -> pa.RecordBatch | None:
        if self.pending:
            return self.pending.pop(0)
        if self.result is None or self.exhausted or self.reader_done:
            return None
        try:
            batch = self.result.reader.read_next_batch()
        except StopIteration:
            return None
        return batch if batch.num_rows else self._next_batch()

    def _peek(self) -> None:
        batch = self._next_batch()
        if batch is None:
            self.exhausted = True
        else:
            self.pending.insert(0, batch)

    def materialize(self) -> None:
        """Read the rest of the stream into memory so the session can run other statements."""
        if self.result is None or self.exhausted:
            return
        reader = self.result.reader
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            if batch.num_rows:
                self.pending.append(batch)
        self.result = None

    def close(self) -> None:
        reader = getattr(self.result, "reader", None)
        if reader is not None:
            reader.close()
        self.result = None
        self.pending.clear()
        self.exhausted = True


def command_tag(statement: Statement, result: Any, rows: int) -> str:
    """The CommandComplete tag: 'SELECT 5', 'INSERT 0 3', 'UPDATE 2', 'CREATE TABLE' ..."""
    if statement.kind == "query" or (statement.returns_rows and statement.kind != "dml"):
        return f"SELECT {rows}"
    count = getattr(result, "rowcount", None)
    if statement.tag in ("INSERT 0", "UPDATE", "DELETE", "MERGE"):
        return f"{statement.tag} {count if count is not None else rows}"
    if statement.copy is not None:
        return f"COPY {rows}"
    return statement.tag
