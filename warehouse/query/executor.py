"""The query path shared by every face: run a parsed script on a cursor, hand back Arrow.

The text is parsed once (`warehouse.parsing.script`); here DuckDB runs its parsed statements and
`warehouse.dynamic.statements` the DYNAMIC TABLE ones, each in order.

Two statement kinds DuckDB cannot run as written go elsewhere: INSERT/UPDATE/DELETE/TRUNCATE of
gpu_metrics (a view over the series and samples) to `warehouse.tsdb.dml`, and ALTER TABLE
... SET (retention = ...) / RESET (retention) to `warehouse.dynamic.retention` (the dynamic
tables reading the table checked, then `warehouse.tsdb.retention`'s rule set).

A SELECT streams through DuckDB's own statement runner (`_submit`, what DuckDB 2.0's Python
relation layer calls after binding the statement a second time in Python to build a lazy
relation): one bind instead of two. `SELECT 1` from 32 threads: 1,150 against 800 queries/s,
1.0 against 1.6 ms of CPU each (bench/bench_http.py has the end-to-end figures). Where this
DuckDB has no such runner, the relation layer runs it; `tests/warehouse/query/test_executor.py`
checks the two agree. A SELECT text that runs again is EXECUTEd prepared
(`warehouse.query.prepared`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.dynamic import retention as dynamic_retention
from warehouse.dynamic import statements as dynamic
from warehouse.errors import sql_error
from warehouse.parsing.script import Script, Statement, parse
from warehouse.query import prepared
from warehouse.tsdb import cold_scan, dml, prune, retention

BATCH_ROWS = 65_536

Params = Sequence[Any] | dict[str, Any] | None

#: Statement types that may write gpu_metrics, a view whose writes `telemetry_dml` runs.
_DML = frozenset({"INSERT", "UPDATE", "DELETE"})

#: How often a SELECT runs when its compressed blocks changed as it started (cold_scan.MOVED).
_ATTEMPTS = 3

#: Whether this DuckDB exposes the statement runner under its relation layer.
DIRECT = hasattr(duckdb.DuckDBPyConnection, "_submit")


def execute(
    cur: duckdb.DuckDBPyConnection,
    sql: str | Script,
    params: Params = None,
    *,
    batch_rows: int = BATCH_ROWS,
    prepare: bool = True,
) -> pa.RecordBatchReader:
    """Run `sql` (one or more statements) and stream the last statement's result.

    Earlier statements run for their effect; parameters bind to the last one. The reader must be
    drained or closed before the cursor runs anything else. `prepare`: whether a SELECT that runs
    again may be prepared (not inside an explicit transaction, where a failed PREPARE would
    abort it).
    """
    script = sql if isinstance(sql, Script) else parse(cur, sql)
    for statement in script.statements[:-1]:
        run(cur, statement, None, batch_rows, prepare).read_all()  # SELECTs are lazy: run them
    return run(cur, script.last, params, batch_rows, prepare)


def run(
    cur: duckdb.DuckDBPyConnection,
    statement: Statement,
    params: Params,
    batch_rows: int,
    prepare: bool = True,
) -> pa.RecordBatchReader:
    """One statement's result as an Arrow stream (an empty one for statements without rows)."""
    try:
        if statement.dynamic is not None:
            table = dynamic.run(cur, statement.dynamic)
            return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        if statement.type == "ALTER" and (rule := retention.parse_statement(statement.text)):
            done = dynamic_retention.set_rule(cur, rule[0], rule[1])
            table = pa.table({"status": [done]})
            return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        if statement.type in _DML and dml.targets_view(statement.reads.target):
            count = dml.run(cur, statement.text, params)
            table = pa.table({"Count": pa.array([count], pa.int64())})
            return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        for attempt in range(_ATTEMPTS):
            try:
                return _read(cur, statement, params, batch_rows, prepare)
            except duckdb.Error as error:
                if cold_scan.MOVED not in str(error) or attempt == _ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")
    except duckdb.Error as error:
        raise sql_error(error) from None


def _read(
    cur: duckdb.DuckDBPyConnection,
    statement: Statement,
    params: Params,
    batch_rows: int,
    prepare: bool,
) -> pa.RecordBatchReader:
    """A statement DuckDB runs: its reads of compressed blocks pruned, and scanned where they
    can be (`warehouse.tsdb.cold_scan`)."""
    text = _pruned(statement)
    select = statement.type == "SELECT"
    named = params if isinstance(params, dict) else None  # positional ones: the function
    bound = cold_scan.bind(cur, text, named) if select and (named or not params) else None
    if bound is not None:
        text, prepare = bound.sql, False
    if DIRECT and select:
        values = list(params) if isinstance(params, Sequence) else params
        reader = _select(cur, text, values or None, batch_rows, prepare)
        return reader if bound is None else _releasing(cur, reader)
    pruned = text is not statement.text
    relation = cur.sql(text if pruned else statement.parsed or text, params=params)
    if relation is None:
        return pa.RecordBatchReader.from_batches(pa.schema([]), [])
    return relation.to_arrow_reader(batch_rows)


def _releasing(
    cur: duckdb.DuckDBPyConnection, reader: pa.RecordBatchReader
) -> pa.RecordBatchReader:
    """`reader`, dropping the cold scans of its statement once it is read to the end (a
    reader left unread keeps them until the cursor's next statement)."""

    def batches() -> Iterator[pa.RecordBatch]:
        yield from reader
        cold_scan.release(cur)

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _pruned(statement: Statement) -> str:
    """The statement's text, with its bounded reads of gpu_metrics given only the compressed
    blocks they need (`warehouse.tsdb.prune`); the text itself when it has none."""
    names = {name.lower() for (_catalog, _schema, name) in statement.reads.tables}
    if not names & prune.VIEWS.keys():
        return statement.text
    found = prune.rewrite_sql(statement.text)
    return statement.text if found == statement.text else found


def _select(
    cur: duckdb.DuckDBPyConnection,
    text: str,
    values: list[Any] | dict[str, Any] | None,
    batch_rows: int,
    prepare: bool,
) -> pa.RecordBatchReader:
    """A SELECT as a stream: EXECUTE of its prepared statement when it runs again
    (`warehouse.query.prepared`), else the text."""
    name = prepared.name_for(cur, text) if values is None and prepare else None
    if name is not None:
        try:
            reader: pa.RecordBatchReader = cur._submit(
                f"EXECUTE {name}", None, "stream", batch_rows
            ).arrow_reader()
            return reader
        except duckdb.Error as error:
            if not prepared.is_missing(error):
                raise
            prepared.lost(cur, text)
    found: pa.RecordBatchReader = cur._submit(text, values, "stream", batch_rows).arrow_reader()
    return found
