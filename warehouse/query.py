"""The query path shared by every face: run a parsed script on a cursor, hand back Arrow.

The text is parsed once (`warehouse.script`); here DuckDB runs its parsed statements and
`warehouse.dynamic.statements` the DYNAMIC TABLE ones, each in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.dynamic import statements as dynamic
from warehouse.errors import sql_error
from warehouse.script import Script, Statement, parse

BATCH_ROWS = 65_536

Params = Sequence[Any] | dict[str, Any] | None


def execute(
    cur: duckdb.DuckDBPyConnection,
    sql: str | Script,
    params: Params = None,
    *,
    batch_rows: int = BATCH_ROWS,
) -> pa.RecordBatchReader:
    """Run `sql` (one or more statements) and stream the last statement's result.

    Earlier statements run for their effect; parameters bind to the last one. The reader must be
    drained or closed before the cursor runs anything else.
    """
    script = sql if isinstance(sql, Script) else parse(cur, sql)
    for statement in script.statements[:-1]:
        run(cur, statement, None, batch_rows).read_all()  # SELECTs are lazy: run them too
    return run(cur, script.last, params, batch_rows)


def run(
    cur: duckdb.DuckDBPyConnection, statement: Statement, params: Params, batch_rows: int
) -> pa.RecordBatchReader:
    """One statement's result as an Arrow stream (an empty one for statements without rows)."""
    try:
        if statement.dynamic is not None:
            table = dynamic.run(cur, statement.dynamic)
            return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        relation = cur.sql(statement.parsed or statement.text, params=params)
        if relation is None:
            return pa.RecordBatchReader.from_batches(pa.schema([]), [])
        return relation.to_arrow_reader(batch_rows)
    except duckdb.Error as error:
        raise sql_error(error) from None
