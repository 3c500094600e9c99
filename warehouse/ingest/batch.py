"""One ingest = one batch = one transaction.

For each source: hash its bytes; if the same bytes were ingested in this format before, say so
and stop (unless forced). Otherwise, in one transaction: take the next batch id from
`wanka.batch_seq`, insert each chunk the reader yields (tagged with the batch id; replacing rows
with the same key for tables that hold one row per thing), keep the rejects, and record the batch.
A reader error, a crash or a kill before COMMIT leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute

from warehouse.errors import UserError
from warehouse.faults import signals
from warehouse.ingest import sources
from warehouse.ingest.base import FORMATS, Format, Parsed, ReadContext, ReadOptions, Reject, Source
from warehouse.jobs import attribution
from warehouse.kernel.arrow_tables import insert_arrow
from warehouse.kernel.engine import Engine
from warehouse.kernel.tables import REPLACE_KEYS
from warehouse.tsdb.append import Appender
from warehouse.tsdb.relations import is_view

#: A line longer than this is kept cut, with the cut said in the reason.
MAX_RAW_CHARS = 65_536


@dataclass
class IngestResult:
    """What one source's ingest did."""

    source: str
    format: str
    batch_id: int | None
    rows: dict[str, int] = field(default_factory=dict)
    rejected: int = 0
    duplicate_of: int | None = None  # the batch that already holds these bytes
    seconds: float = 0.0
    first_reject: Reject | None = None

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())


def read_context(engine: Engine) -> ReadContext:
    """The table schemas and model names a reader may need, read once per ingest."""
    cur = engine.cursor()
    try:
        tables = cur.sql(
            "SELECT schema_name, table_name FROM duckdb_tables() "
            "WHERE database_name = current_database() AND schema_name = 'main' "
            "UNION ALL SELECT schema_name, view_name FROM duckdb_views() "  # gpu_metrics
            "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal"
        ).fetchall()
        names = dict(
            cur.sql(
                "SELECT full_name, model FROM gpu_models WHERE full_name IS NOT NULL"
            ).fetchall()
        )
    finally:
        cur.close()
    schemas = {table: engine.table_schema(table) for _, table in tables}
    return ReadContext(schemas=schemas, model_names=names)


def ingest_source(
    engine: Engine,
    fmt: Format,
    source: Source,
    options: ReadOptions,
    context: ReadContext,
    *,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> IngestResult:
    """Ingest one source as one batch; see the module docstring."""
    started = time.perf_counter()
    result = IngestResult(source.name, fmt.name, None)
    meaning = options_key(options)
    size = source.path.stat().st_size
    digest: str | None = None
    # Only a file of the same size can hold the same bytes: hash first only when one was seen
    # (then a repeat costs no parse); otherwise hash while reading, one pass over the file.
    if force or _seen_size(engine, fmt.name, size, meaning):
        digest = sources.sha256(source.path)
        earlier = None if force else _earlier_batch(engine, fmt.name, digest, meaning)
        if earlier is not None:
            result.duplicate_of = earlier
            result.seconds = time.perf_counter() - started
            return result
    started_at = datetime.now(UTC)
    with engine.transaction() as cur:
        batch_id = int(cur.sql("SELECT nextval('wanka.batch_seq')").fetchall()[0][0])
        result.batch_id = batch_id
        opened = sources.open_text_source(
            source, fmt.expected, binary=fmt.binary, hashing=digest is None
        )
        telemetry = Appender(cur, batch_id)  # its derivations once, over the whole batch
        with opened as handle:
            for chunk in fmt.read(handle.stream, source, options, context):
                _store(cur, batch_id, source, chunk, result, telemetry)
                if progress:
                    progress(chunk.rows.num_rows)
            if digest is None:
                digest = handle.hashed.hexdigest() if handle.hashed else sources.sha256(source.path)
        telemetry.finish()  # job labels first: the whole-node rows give way to them
        if result.rows:
            attribution.after_ingest(cur, batch_id, set(result.rows))
            signals.after_ingest(cur, batch_id, set(result.rows))
        if result.total_rows == 0 and result.rejected:
            reason = result.first_reject.reason if result.first_reject else "unreadable"
            where = (
                f"line {result.first_reject.line}: "
                if result.first_reject and result.first_reject.line
                else ""
            )
            raise UserError(
                f"{source.name}: nothing could be read as {fmt.expected} ({result.rejected} "
                f"lines rejected; {where}{reason})"
            )
        cur.execute(
            "INSERT INTO wanka.ingest_batches (batch_id, source_format, source_name, "
            "content_sha256, target_table, rows, rejected, started_at, finished_at, bytes, "
            "options) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                batch_id,
                fmt.name,
                source.name,
                digest,
                ",".join(sorted(result.rows)) or None,
                result.total_rows,
                result.rejected,
                started_at,
                datetime.now(UTC),  # not now(): in SQL that is when the transaction began
                size,
                meaning,
            ],
        )
    result.seconds = time.perf_counter() - started
    return result


def options_key(options: ReadOptions) -> str:
    """The options given, as stable text: part of what makes two ingests the same.

    >>> options_key(ReadOptions(table="nodes"))
    '{"table": "nodes"}'
    """
    given = {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in asdict(options).items()
        if value != getattr(DEFAULT_OPTIONS, name)
    }
    return json.dumps(given, sort_keys=True)


DEFAULT_OPTIONS = ReadOptions()


def _seen_size(engine: Engine, fmt: str, size: int, meaning: str) -> bool:
    """Whether a batch of this format and options held a file of exactly this size."""
    return (_lookup(engine, "count(*)", "bytes = ?", [fmt, size, meaning]) or 0) > 0


def _earlier_batch(engine: Engine, fmt: str, digest: str, meaning: str) -> int | None:
    """The batch that already holds these bytes in this format with these options."""
    return _lookup(engine, "max(batch_id)", "content_sha256 = ?", [fmt, digest, meaning])


def _lookup(engine: Engine, what: str, match: str, params: list[object]) -> int | None:
    cur = engine.cursor()
    try:
        found: int | None = cur.execute(
            f"SELECT {what} FROM wanka.ingest_batches WHERE source_format = ? AND {match} "
            "AND options IS NOT DISTINCT FROM ?",
            params,
        ).fetchall()[0][0]
        return found
    finally:
        cur.close()


def _store(
    cur: duckdb.DuckDBPyConnection,
    batch_id: int,
    source: Source,
    chunk: Parsed,
    result: IngestResult,
    telemetry: Appender,
) -> None:
    rows = chunk.rows
    if rows.num_rows:
        rows = _with_batch_id(rows, batch_id)
        keys = REPLACE_KEYS.get(chunk.table)
        if keys:
            rows = last_per_key(rows, keys)
            _delete_replaced(cur, chunk.table, keys, rows)
        if is_view(chunk.table):
            telemetry.add(rows)
        else:
            insert_arrow(cur, chunk.table, rows)
        result.rows[chunk.table] = result.rows.get(chunk.table, 0) + rows.num_rows
    if chunk.rejects:
        if result.first_reject is None:
            result.first_reject = chunk.rejects[0]
        result.rejected += len(chunk.rejects)
        _store_rejects(cur, batch_id, source, chunk.rejects)


def _with_batch_id(rows: pa.Table, batch_id: int) -> pa.Table:
    column = pa.array(np.full(rows.num_rows, batch_id, dtype=np.int64))
    if "batch_id" in rows.column_names:
        return rows.set_column(rows.column_names.index("batch_id"), "batch_id", column)
    return rows.append_column("batch_id", column)


def last_per_key(rows: pa.Table, keys: tuple[str, ...]) -> pa.Table:
    """Keep the last row for each key: a later line about the same thing is the newer one.

    >>> last_per_key(pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]}), ("k",)).to_pydict()
    {'k': ['b', 'a'], 'v': [2, 3]}
    """
    import polars as pl  # here only: the check below is its one use

    key_rows = pl.from_arrow(rows.select(list(keys)), rechunk=False)
    assert isinstance(key_rows, pl.DataFrame)
    # Distinct hashes mean distinct keys: the usual case, seen in one hashing pass. Equal hashes
    # (a repeat, or a collision) take the exact way below.
    distinct = key_rows.to_series() if len(keys) == 1 else key_rows.hash_rows()
    if distinct.n_unique() == rows.num_rows:
        return rows
    numbered = rows.append_column("_wanka_row", pa.array(np.arange(rows.num_rows)))
    last = numbered.group_by(list(keys), use_threads=False).aggregate([("_wanka_row", "max")])
    if last.num_rows == rows.num_rows:
        return rows
    keep = pa.compute.sort_indices(last["_wanka_row_max"])
    return rows.take(last["_wanka_row_max"].take(keep))


def _delete_replaced(
    cur: duckdb.DuckDBPyConnection, table: str, keys: tuple[str, ...], rows: pa.Table
) -> None:
    """Delete the rows that `rows` replace: same key, whatever batch wrote them."""
    key_rows = rows.select(list(keys))
    cur.register("_wanka_replaced", key_rows)
    try:
        match = " AND ".join(f't."{k}" = r."{k}"' for k in keys)
        cur.execute(f'DELETE FROM "{table}" t USING _wanka_replaced r WHERE {match}')
    finally:
        with contextlib.suppress(duckdb.TransactionException):  # aborted: keep the first error
            cur.unregister("_wanka_replaced")


def _store_rejects(
    cur: duckdb.DuckDBPyConnection, batch_id: int, source: Source, rejects: list[Reject]
) -> None:
    def cut(raw: str | None) -> str | None:
        return raw if raw is None or len(raw) <= MAX_RAW_CHARS else raw[:MAX_RAW_CHARS]

    table = pa.table(
        {
            "batch_id": pa.array([batch_id] * len(rejects), pa.int64()),
            "source_name": pa.array([source.name] * len(rejects), pa.string()),
            "line": pa.array([r.line for r in rejects], pa.int64()),
            "field": pa.array([r.field for r in rejects], pa.string()),
            "raw": pa.array([cut(r.raw) for r in rejects], pa.string()),
            "reason": pa.array(
                [
                    r.reason
                    if r.raw is None or len(r.raw) <= MAX_RAW_CHARS
                    else f"{r.reason} (line cut to {MAX_RAW_CHARS} characters)"
                    for r in rejects
                ],
                pa.string(),
            ),
        }
    )
    insert_arrow(cur, "wanka.ingest_rejects", table)


def format_named(name: str) -> Format:
    """The format a person named, or a usage error listing the ones there are."""
    from warehouse.ingest import formats  # noqa: F401  (registers every reader)

    try:
        return FORMATS[name]
    except KeyError:
        known = ", ".join(sorted(FORMATS))
        raise UserError(f"unknown ingest format {name!r}; choose one of: {known}") from None
