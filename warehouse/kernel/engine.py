"""The one place that opens DuckDB.

An `Engine` owns one database file: it resolves where the file is, opens it (saying clearly when
another process holds it), brings its schema up to date (`warehouse.kernel.migrations`), loads the
reference tables (`warehouse.kernel.reference`), and binds the model functions and the
decoder of the telemetry's compressed blocks (`warehouse.kernel.blocks`). Everything else
asks it for cursors.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from udfs import registry
from warehouse.ai import functions as ai_functions
from warehouse.errors import DatabaseLocked, UserError, one_line
from warehouse.kernel import blocks
from warehouse.kernel.arrow_tables import insert_arrow, table_schema
from warehouse.kernel.migrations import applied_version, check_version, migrate
from warehouse.kernel.reference import load_reference_tables
from warehouse.kernel.transactions import transaction

DEFAULT_DB = "wanka.duckdb"
#: The name the database file is attached under. Not the file's stem: a file called
#: wanka.duckdb would otherwise make `wanka.ingest_batches` ambiguous (catalog or schema?).
CATALOG = "warehouse"
DB_ENV = "WANKA_DB"
#: Idle cursors an engine keeps for `lend` (more are opened as needed, and closed after).
IDLE_CURSORS = 64
#: Rows per row group of the database file (DuckDB's default: 122,880). A scan walks every row
#: group's zone map even when it reads one (0.7 µs each): at 1B samples the read of the newest
#: batch took 6.4 ms with the default and 0.8 ms with 8.5× fewer row groups
#: (bench/bench_dynamic.py --rows). `$WANKA_ROW_GROUP_SIZE` overrides it (`row_group_size`).
ROW_GROUP_SIZE = 1_048_576
ROW_GROUP_ENV = "WANKA_ROW_GROUP_SIZE"

#: Settings every connection gets. Extensions that would download fail fast instead of hanging.
BASE_CONFIG: dict[str, Any] = {
    "TimeZone": "UTC",
    "autoinstall_known_extensions": False,
}

_LOCK_PID = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")


def resolve_db_path(option: str | os.PathLike[str] | None = None) -> str:
    """`--db PATH`, else `$WANKA_DB`, else `./wanka.duckdb`; `:memory:` stays as it is."""
    chosen = str(option) if option else os.environ.get(DB_ENV) or DEFAULT_DB
    return chosen if chosen == ":memory:" else str(Path(chosen).expanduser())


def row_group_size() -> int:
    """Rows per row group of the file: `$WANKA_ROW_GROUP_SIZE`, else `ROW_GROUP_SIZE`."""
    given = os.environ.get(ROW_GROUP_ENV, "").strip()
    if not given:
        return ROW_GROUP_SIZE
    if not given.isdigit() or not 2048 <= int(given) <= 1 << 30:
        raise UserError(
            f"${ROW_GROUP_ENV} must be a whole number of rows from 2048 to {1 << 30}, not {given!r}"
        )
    return int(given)


def _sql_string(text: str) -> str:
    """A SQL string literal.

    >>> _sql_string("it's.duckdb")
    "'it''s.duckdb'"
    """
    return "'" + text.replace("'", "''") + "'"


def _process_description(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"PID {pid}"
    words = [w for w in raw.decode(errors="replace").split("\0") if w]
    if words and Path(words[0]).name.startswith("python") and len(words) > 1:
        words = words[1:]  # "python -m x" reads better without the interpreter path
    command = " ".join(Path(words[0]).name if i == 0 else w for i, w in enumerate(words))
    command = " ".join(command.split())  # one line, whatever the command line held
    return f"PID {pid} ({command[:80]})" if command else f"PID {pid}"


def _locked_message(path: str, error: Exception) -> str:
    match = _LOCK_PID.search(str(error))
    holder = _process_description(int(match["pid"])) if match else "another process"
    return (
        f"database {path} is in use by {holder}; stop that process, or send your SQL to it "
        f"(a running `wanka serve` owns the file), or pass another --db"
    )


class Engine:
    """An open wanka database: one DuckDB connection plus cursors handed out per caller."""

    def __init__(self, path: str | None = None, *, read_only: bool = False) -> None:
        self.path = resolve_db_path(path)
        self.read_only = read_only
        self._lock = threading.Lock()
        self._idle: list[duckdb.DuckDBPyConnection] = []  # cursors `lend` hands out again
        self._closed = False
        self.con = self._connect()
        try:
            blocks.register(self.con)  # the schema's gpu_metrics view reads cold blocks with it
            # the AI macros of schema step 0024 call them
            self.ai = ai_functions.register(self.con, read_only=read_only)
            if not read_only:
                migrate(self.con)
                load_reference_tables(self.con)
            else:
                check_version(self.con)
            registry.register(self.con)
        except BaseException:
            self.con.close()
            raise

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if self.path != ":memory:":
            parent = Path(self.path).parent
            if self.read_only and not Path(self.path).exists():
                raise UserError(f"database {self.path} does not exist")
            if not parent.is_dir():
                raise UserError(f"cannot create database {self.path}: folder {parent} is missing")
        con = duckdb.connect(":memory:", config=dict(BASE_CONFIG))
        mode = f" (ROW_GROUP_SIZE {row_group_size()}{', READ_ONLY' if self.read_only else ''})"
        try:
            con.execute(f"ATTACH {_sql_string(self.path)} AS {CATALOG}{mode}")
        except duckdb.IOException as error:
            con.close()
            if "lock" in str(error).lower():
                raise DatabaseLocked(_locked_message(self.path, error)) from None
            raise UserError(f"cannot open database {self.path}: {one_line(str(error))}") from None
        except duckdb.Error as error:
            con.close()
            raise UserError(f"cannot open database {self.path}: {one_line(str(error))}") from None
        con.execute(f"USE {CATALOG}")
        return con

    # -- use -------------------------------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection of its own for one caller (thread, request); close it when done."""
        with self._lock:
            cur = self.con.cursor()
        cur.execute(f"USE {CATALOG}")  # a cursor starts in the in-memory catalog
        return cur

    def lend(
        self, prepare: Callable[[duckdb.DuckDBPyConnection], None] | None = None
    ) -> duckdb.DuckDBPyConnection:
        """A cursor from the idle ones when there is one, else a new one (given to `prepare`
        first); hand it back with `take_back`. Opening a cursor costs ~0.3 ms (the USE is a
        statement), a request's whole SELECT 1 about as much again."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        cur = self.cursor()
        if prepare is not None:
            prepare(cur)
        return cur

    def take_back(self, cur: duckdb.DuckDBPyConnection, *, reusable: bool) -> None:
        """Keep a lent cursor for the next caller when `reusable` (no transaction, nothing
        left running, no state a statement could have left on it), else close it."""
        if reusable:
            with self._lock:
                if len(self._idle) < IDLE_CURSORS and not self._closed:
                    self._idle.append(cur)
                    return
        cur.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor inside BEGIN ... COMMIT; anything raised rolls the whole unit back."""
        cur = self.cursor()
        try:
            with transaction(cur):
                yield cur
        finally:
            cur.close()

    def table_schema(self, table: str) -> pa.Schema:
        """The Arrow schema of a table, read from the database (its DDL is the one source), on a
        cursor of its own: the serve process asks from several threads at once."""
        cur = self.cursor()
        try:
            return table_schema(cur, table)
        finally:
            cur.close()

    def insert_arrow(
        self, cur: duckdb.DuckDBPyConnection, table: str, data: pa.Table | pa.RecordBatchReader
    ) -> int:
        """Append Arrow rows to `table`, matching columns by name; returns rows written."""
        return insert_arrow(cur, table, data)

    def lock_down(self, *, memory_limit: str | None = None) -> None:
        """Serve user SQL from now on: no file access, no extension loading, settings locked.

        For the life of this engine (DuckDB cannot undo it): file reads, COPY, ATTACH and
        INSTALL/LOAD fail, and every later SET is refused. Ingest still works, because readers
        read files in Python and hand DuckDB Arrow. Call after migrations and reference loads.
        """
        with self._lock:
            if memory_limit:
                self.con.execute(f"SET memory_limit = {_sql_string(memory_limit)}")
            self.con.execute("SET autoload_known_extensions = false")
            self.con.execute("SET enable_external_access = false")
            self.con.execute("SET lock_configuration = true")

    @property
    def schema_version(self) -> int:
        return applied_version(self.con)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for cur in idle:
            cur.close()
        self.ai.close()
        self.con.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_memory() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with wanka's settings and model functions, for reading a lake.

    No database file: `warehouse.engines.duck` registers the lake's Delta tables on it.
    """
    con = duckdb.connect(":memory:", config=dict(BASE_CONFIG))
    registry.register(con)
    return con
