"""Bulk loads of tables: `inventory` (nodes CSV), `csv` and `parquet` into a named table.

Column names must be columns of the target table's DDL; values are checked against its types
row by row (a row that does not fit is a reject naming the column; the rest loads).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from warehouse.errors import UserError, one_line
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register
from warehouse.ingest.typed import cast_text, duckdb_type

BLOCK_BYTES = 16 << 20

#: Names other inventories use for the columns of `nodes` (the Alibaba GPU trace's node list).
NODE_ALIASES = {"sn": "host", "hostname": "host", "gpu": "gpus", "model": "gpu_model"}
#: Columns converted on the way in: name -> (target column, divisor).
NODE_UNITS = {"cpu_milli": ("cpu_cores", 1000), "memory_mib": ("memory_gb", 1024)}
INVENTORY_TABLES = ("nodes", "sites", "clusters")


@register("inventory", "an inventory CSV with a header naming columns of nodes")
def read_inventory(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    table = options.table or "nodes"
    if table not in INVENTORY_TABLES:
        raise UserError(f"inventory loads one of {', '.join(INVENTORY_TABLES)}, not {table!r}")
    aliases = NODE_ALIASES if table == "nodes" else {}
    units = NODE_UNITS if table == "nodes" else {}
    yield from _read_csv(stream, source, table, context, aliases, units)


@register("csv", "a CSV file with a header naming columns of the --table")
def read_csv(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    yield from _read_csv(stream, source, _target(options, "csv"), context, {}, {})


@register("parquet", "a Parquet file whose columns are columns of the --table", binary=True)
def read_parquet(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    table = _target(options, "parquet")
    schema = context.schema(table)
    try:
        parquet = pq.ParquetFile(stream)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as error:
        raise UserError(f"{source.name}: not a Parquet file ({one_line(str(error))})") from None
    try:
        names = parquet.schema_arrow.names
    except (pa.ArrowException, UnicodeDecodeError) as error:
        raise UserError(f"{source.name}: unreadable Parquet schema ({error})") from None
    _check_columns(source, table, names, schema)
    target = pa.schema([schema.field(n) for n in names if n != "batch_id"])
    batches = parquet.iter_batches(batch_size=1 << 20, columns=target.names)
    group = 0
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError, UnicodeDecodeError) as error:
            # a damaged page: the whole file is refused (one transaction), naming where
            raise UserError(
                f"{source.name}: damaged Parquet data after {group:,} rows: {one_line(str(error))}"
            ) from None
        try:
            rows = fit(pa.Table.from_batches([batch]), target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise UserError(f"{source.name}: columns do not fit table {table}: {error}") from None
        _check_text(source, rows, group)
        group += batch.num_rows
        yield Parsed(table, rows)


def _check_text(source: Source, rows: pa.Table, offset: int) -> None:
    """Refuse text columns holding bytes that are not UTF-8 (Parquet readers do not check)."""
    for name in rows.column_names:
        column = rows[name]
        value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
            continue
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            raise UserError(
                f"{source.name}: column {name}: text that is not UTF-8 within rows "
                f"{offset + 1:,}-{offset + rows.num_rows:,}"
            ) from None


def fit(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast `rows` to `target`, but leave dictionary-encoded text as it is: DuckDB reads it
    natively and decoding it first costs more than the rest of the load."""
    columns = []
    for name in target.names:
        column, wanted = rows[name], target.field(name).type
        if pa.types.is_dictionary(column.type) and column.type.value_type == wanted:
            columns.append(column)
        else:
            columns.append(column.cast(wanted))
    return pa.Table.from_arrays(columns, names=target.names)


def _target(options: ReadOptions, fmt: str) -> str:
    if not options.table:
        raise UserError(f"{fmt} ingest needs --table NAME: the table to load into")
    return options.table


def _check_columns(source: Source, table: str, names: list[str], schema: pa.Schema) -> None:
    unknown = [n for n in names if n not in schema.names]
    if unknown:
        raise UserError(
            f"{source.name}: columns {', '.join(unknown)} are not in table {table} "
            f"(its columns: {', '.join(n for n in schema.names if n != 'batch_id')})"
        )
    if not names:
        raise UserError(f"{source.name}: no header line naming columns of {table}")


def _read_csv(
    stream: IO[bytes],
    source: Source,
    table: str,
    context: ReadContext,
    aliases: dict[str, str],
    units: dict[str, tuple[str, int]],
) -> Iterator[Parsed]:
    schema = context.schema(table)
    try:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES),
            convert_options=pacsv.ConvertOptions(
                column_types={}, strings_can_be_null=False, auto_dict_encode=False
            ),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
        )
    except pa.ArrowInvalid as error:
        raise UserError(f"{source.name}: not a CSV file with a header ({error})") from None
    try:
        given = reader.schema.names
    except UnicodeDecodeError as error:
        raise UserError(
            f"{source.name}: line 1: the header is not UTF-8 text (byte {error.start} of a name)"
        ) from None
    renamed = [aliases.get(n, units[n][0] if n in units else n) for n in given]
    _check_columns(source, table, renamed, schema)
    line = 1  # the header
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as error:
            raise UserError(f"{source.name}: after line {line}: {error}") from None
        texts = pa.Table.from_batches([batch]).cast(pa.schema([(n, pa.string()) for n in given]))
        texts = texts.rename_columns(renamed)
        rows, misfits = cast_text(texts, schema)
        rows = _convert_units(rows, given, units)
        rejects = [
            Reject(
                line + i + 1,
                f"{column}: {raw!r} is not a valid {duckdb_type(schema.field(column).type)}",
                raw=",".join(
                    "" if v is None else str(v) for v in texts.slice(i, 1).to_pylist()[0].values()
                ),
                field=column,
            )
            for i, column, raw in misfits
        ]
        line += batch.num_rows
        yield Parsed(table, rows, rejects)


def _convert_units(rows: pa.Table, given: list[str], units: dict[str, tuple[str, int]]) -> pa.Table:
    """Milli-CPUs to cores, MiB to GB: the other inventory's units, after the type check."""
    for original, (column, divisor) in units.items():
        if original in given and column in rows.column_names:
            typed = rows[column].type
            scaled = pc.divide(pc.cast(rows[column], pa.float64()), float(divisor))
            if pa.types.is_integer(typed):
                scaled = pc.round(scaled)
            rows = rows.set_column(
                rows.column_names.index(column), column, pc.cast(scaled, typed, safe=False)
            )
    return rows
