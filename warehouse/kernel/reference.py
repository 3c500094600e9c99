"""Reference tables: published specs shipped as `sql/reference/<table>.csv`, reloaded into the
database whenever a CSV changed (each reload logged, so dynamic tables joining one refresh)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv

from warehouse.kernel import catalog
from warehouse.kernel.arrow_tables import insert_arrow, quote_table, table_schema
from warehouse.kernel.transactions import transaction


def read_reference_csv(con: duckdb.DuckDBPyConnection, ref: catalog.ReferenceTable) -> pa.Table:
    """Read a reference CSV with the column types of its table; unknown columns are an error.

    Only an empty field is NULL: a spec value spelled 'NA' or 'null' stays text.
    """
    schema = table_schema(con, ref.table)
    header = pacsv.read_csv(ref.path, read_options=pacsv.ReadOptions(block_size=1 << 16)).schema
    unknown = [c for c in header.names if c not in schema.names]
    if unknown:
        raise ValueError(f"{ref.path}: columns {unknown} are not in table {ref.table}")
    types = {name: schema.field(name).type for name in header.names}
    options = pacsv.ConvertOptions(
        column_types=types,
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    return pacsv.read_csv(ref.path, convert_options=options)


def load_reference_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Replace each reference table whose CSV changed since it was last loaded."""
    loaded = dict(
        con.sql("SELECT table_name, content_sha256 FROM wanka.reference_loads").fetchall()
    )
    changed: list[str] = []
    for ref in catalog.reference_tables():
        digest = ref.sha256
        if loaded.get(ref.table) == digest:
            continue
        rows = read_reference_csv(con, ref)
        with transaction(con):
            con.execute(f"DELETE FROM {quote_table(ref.table)}")
            insert_arrow(con, ref.table, rows)
            # dynamic tables joining a reference table see the reload and refresh fully
            con.execute(
                "INSERT INTO wanka.table_changes SELECT ?, nextval('wanka.batch_seq'), 'reload', "
                "?, now()",
                [ref.table, rows.num_rows],
            )
            con.execute(
                "INSERT OR REPLACE INTO wanka.reference_loads VALUES (?, ?, ?, ?, now())",
                [ref.table, ref.path.name, digest, rows.num_rows],
            )
        changed.append(ref.table)
    return changed
