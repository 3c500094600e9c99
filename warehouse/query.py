"""The query path shared by every face: run SQL on a cursor, hand back an Arrow stream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.errors import UserError, WankaError

BATCH_ROWS = 65_536

# DuckDB errors that mean the SQL itself is wrong (exit 2), as opposed to the system failing.
_INPUT_ERRORS: tuple[type[duckdb.Error], ...] = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.InvalidInputException,
    duckdb.ConversionException,
    duckdb.ConstraintException,
    duckdb.NotImplementedException,
    duckdb.SyntaxException,
    duckdb.TransactionException,
    duckdb.OutOfRangeException,
)


def one_line(message: str) -> str:
    """DuckDB's multi-line error text as one line a person can act on.

    >>> one_line('Catalog Error: no table x!\\nDid you mean "y"?\\n\\nLINE 1: select ...')
    'Catalog Error: no table x! Did you mean "y"?'
    """
    kept = [line.strip() for line in message.splitlines() if line.strip()]
    kept = [line for line in kept if not line.startswith("LINE ") and set(line) != {"^"}]
    return " ".join(kept)


def sql_error(error: duckdb.Error) -> WankaError:
    """Map a DuckDB error to a wanka error with the right exit status."""
    failed_commit = "Failed to commit" in str(error)  # e.g. the disk is full: not the input
    cls = UserError if isinstance(error, _INPUT_ERRORS) and not failed_commit else WankaError
    return cls(one_line(str(error)))


def execute(
    cur: duckdb.DuckDBPyConnection,
    sql: str,
    params: Sequence[Any] | dict[str, Any] | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
) -> pa.RecordBatchReader:
    """Run `sql` (one or more statements) and stream the last statement's result.

    Earlier statements run for their effect; parameters bind to the last one. The reader must be
    drained or closed before the cursor runs anything else.
    """
    from warehouse.dynamic import statements as dynamic  # imports this module

    script = dynamic.split(sql)
    if script is not None:
        return _execute_script(cur, script, params, batch_rows)
    try:
        statements = cur.extract_statements(sql)
    except duckdb.Error as error:
        raise sql_error(error) from None
    if not statements:
        raise UserError("no SQL statement given")
    try:
        for statement in statements[:-1]:
            relation = cur.sql(statement.query)
            if relation is not None:
                relation.to_arrow_table()  # SELECTs are lazy: run them like the rest
        relation = cur.sql(statements[-1].query, params=params)
        if relation is None:
            return pa.RecordBatchReader.from_batches(pa.schema([]), [])
        return relation.to_arrow_reader(batch_rows)
    except duckdb.Error as error:
        raise sql_error(error) from None


def _execute_script(
    cur: duckdb.DuckDBPyConnection,
    script: list[Any],
    params: Sequence[Any] | dict[str, Any] | None,
    batch_rows: int,
) -> pa.RecordBatchReader:
    """Run a script holding DYNAMIC TABLE statements, one statement at a time."""
    from warehouse.dynamic import statements as dynamic

    for i, statement in enumerate(script):
        last = i == len(script) - 1
        if statement.verb is None:
            reader = execute(cur, statement.text, params if last else None, batch_rows=batch_rows)
            if last:
                return reader
            reader.read_all()
            continue
        try:
            table = dynamic.run(cur, statement)
        except duckdb.Error as error:
            raise sql_error(error) from None
        if last:
            return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    raise UserError("no SQL statement given")
