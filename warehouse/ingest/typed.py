"""Text columns to the types of a table's DDL, row by row, keeping the rows that do not fit.

Casting goes through DuckDB's own TRY_CAST on a private in-memory connection, so a value is
accepted exactly when the table itself would accept it; the reader still never touches the
warehouse database.
"""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa

from warehouse.kernel.engine import BASE_CONFIG

_local = threading.local()


def duckdb_type(arrow: pa.DataType) -> str:
    """The DuckDB type for an Arrow type read from a table schema.

    >>> duckdb_type(pa.timestamp("us", tz="UTC")), duckdb_type(pa.list_(pa.string()))
    ('TIMESTAMPTZ', 'VARCHAR[]')
    """
    if pa.types.is_timestamp(arrow):
        return "TIMESTAMPTZ" if arrow.tz else "TIMESTAMP"
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return duckdb_type(arrow.value_type) + "[]"
    if pa.types.is_map(arrow):
        return f"MAP({duckdb_type(arrow.key_type)}, {duckdb_type(arrow.item_type)})"
    simple = {
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INTEGER",
        pa.int64(): "BIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.bool_(): "BOOLEAN",
        pa.string(): "VARCHAR",
        pa.large_string(): "VARCHAR",
        pa.date32(): "DATE",
        pa.binary(): "BLOB",
    }
    if arrow in simple:
        return simple[arrow]
    raise TypeError(f"no DuckDB type for Arrow type {arrow}")


def _connection() -> duckdb.DuckDBPyConnection:
    con = getattr(_local, "con", None)
    if con is None:
        con = duckdb.connect(":memory:", config={**BASE_CONFIG, "threads": 1})
        _local.con = con
    return con


def cast_text(texts: pa.Table, schema: pa.Schema) -> tuple[pa.Table, list[tuple[int, str, str]]]:
    """Cast string columns to `schema`'s types; return the rows that fit and the misfits.

    Empty strings are NULL. A misfit is (row index, column, value): the first column of that
    row that did not cast. Rows with a misfit are left out of the returned table.
    """
    names = [n for n in texts.column_names if n in schema.names]
    con = _connection()
    con.register("_wanka_text", texts.select(names))
    try:
        casts = []
        flags = []
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            target = duckdb_type(schema.field(name).type)
            value = f"nullif(trim({quoted}), '')"
            if target == "VARCHAR":
                casts.append(f"{quoted} AS {quoted}")
                continue
            casts.append(f"TRY_CAST({value} AS {target}) AS {quoted}")
            flags.append(f"({value} IS NOT NULL AND TRY_CAST({value} AS {target}) IS NULL)")
        bad = " OR ".join(flags) or "false"
        table = con.sql(
            f"SELECT {', '.join(casts)}, {bad} AS _bad FROM _wanka_text"
        ).to_arrow_table()
    finally:
        con.unregister("_wanka_text")
    bad_mask = table.column("_bad").to_pylist()
    good = table.drop_columns(["_bad"]).filter(pa.array([not b for b in bad_mask]))
    misfits: list[tuple[int, str, str]] = []
    if any(bad_mask):
        for row in (i for i, b in enumerate(bad_mask) if b):
            for name in names:
                raw = texts.column(name)[row].as_py()
                target_type = schema.field(name).type
                if raw is None or not raw.strip() or pa.types.is_string(target_type):
                    continue
                check = con.execute(
                    f"SELECT TRY_CAST(? AS {duckdb_type(target_type)}) IS NULL", [raw.strip()]
                ).fetchall()[0][0]
                if check:
                    misfits.append((row, name, raw))
                    break
    return good.cast(pa.schema([schema.field(n) for n in names])), misfits
