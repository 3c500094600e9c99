"""Arrow tables shaped by the DDL: the simulator states no column types of its own.

The schema comes from running `sql/schema/` in a throwaway in-memory DuckDB, so a column added to
the DDL appears here (as nulls until the simulator fills it) and a misspelt column is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from warehouse.kernel import arrow_tables, engine, migrations

TS_TYPE = pa.timestamp("us", tz="UTC")


@cache
def ddl_schema(table: str) -> pa.Schema:
    """The Arrow schema of a base table, as DuckDB gives it.

    >>> ddl_schema("sites").names[:3]
    ['site', 'region', 'pue']
    """
    con = duckdb.connect(":memory:", config=dict(engine.BASE_CONFIG))
    try:
        migrations.migrate(con)
        return arrow_tables.table_schema(con, table)
    finally:
        con.close()


def to_table(table: str, columns: Mapping[str, Any], rows: int | None = None) -> pa.Table:
    """Build `table`'s Arrow table from the columns given; the others are null.

    Args:
        table: a base table of the DDL.
        columns: column name → values (list, numpy array or Arrow array).
        rows: row count, needed only when `columns` is empty.

    Raises:
        ValueError: when a column is not in the DDL.
    """
    schema = ddl_schema(table)
    unknown = sorted(set(columns) - set(schema.names))
    if unknown:
        raise ValueError(f"columns {unknown} are not in table {table} (see sql/schema/)")
    if rows is None:
        rows = len(next(iter(columns.values())))
    arrays = []
    for field in schema:
        if field.name in columns:
            values = columns[field.name]
            if isinstance(values, pa.Array | pa.ChunkedArray):
                arrays.append(values.cast(field.type))
            else:
                arrays.append(pa.array(values, type=field.type))
        else:
            arrays.append(pa.nulls(rows, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def timestamps(start_us: int, seconds: np.ndarray) -> pa.Array:
    """Times given as seconds after `start_us` (NaN = missing) as a TIMESTAMPTZ array.

    >>> timestamps(0, np.array([1.5, np.nan])).to_pylist()[1] is None
    True
    """
    seconds = np.asarray(seconds, dtype=np.float64)
    missing = np.isnan(seconds)
    micros = start_us + np.round(np.where(missing, 0.0, seconds) * 1e6).astype(np.int64)
    return pa.array(micros, type=pa.int64(), mask=missing).cast(TS_TYPE)
