"""Renderers: an Arrow stream in, bytes of one output format out, batch by batch.

Every face (CLI now, HTTP later) picks a renderer by name; none builds the whole result in
memory except `table`, which is for people and shows a bounded number of rows.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Callable, Iterator
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

FORMATS = ("table", "csv", "json", "ndjson", "arrow", "parquet")
BINARY_FORMATS = frozenset({"arrow", "parquet"})


def json_value(value: Any) -> Any:
    """A Python value from Arrow as something json.dumps accepts (NaN/inf become null)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else None
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # Arrow MAP columns come out as lists of (key, value) pairs.
        if value and all(isinstance(p, tuple) and len(p) == 2 for p in value):
            return {str(k): json_value(v) for k, v in value}
        return [json_value(v) for v in value]
    return str(value)


def json_rows(batch: pa.RecordBatch) -> Iterator[dict[str, Any]]:
    names = batch.schema.names
    columns = [col.to_pylist() for col in batch.columns]
    for values in zip(*columns, strict=True):
        yield {name: json_value(v) for name, v in zip(names, values, strict=True)}


def flat_for_csv(batch: pa.RecordBatch) -> pa.RecordBatch:
    """CSV has no nested values: lists, structs and maps become JSON text."""
    arrays = []
    for col in batch.columns:
        if pa.types.is_nested(col.type):
            text = [None if v is None else json.dumps(json_value(v)) for v in col.to_pylist()]
            arrays.append(pa.array(text, pa.string()))
        elif pa.types.is_dictionary(col.type):
            arrays.append(pc.cast(col, col.type.value_type))
        else:
            arrays.append(col)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def csv_header(names: list[str]) -> bytes:
    """The header line, quoted as the values are (csv_column: only where a name needs it).

    >>> csv_header(["answer", "a,b"])
    b'answer,"a,b"\\n'
    """
    return (",".join(csv_column(pa.array(names, pa.string())).to_pylist()) + "\n").encode()


def csv_column(col: pa.Array) -> pa.Array:
    '''One column's CSV text, as PostgreSQL's COPY ... CSV and most tools write it: a string in
    quotes only when it needs them (a comma, a quote, a line break; or empty, so that it is not
    read as NULL), quotes inside doubled; other values as Arrow's CSV writer prints them.

    >>> csv_column(pa.array(["idle", "a,b", 'say "hi"', "", None])).to_pylist()
    ['idle', '"a,b"', '"say ""hi"""', '""', None]
    '''
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return pc.cast(col, pa.string())
    needs = pc.or_(pc.match_substring_regex(col, '[",\r\n]'), pc.equal(col, ""))
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(col, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, col)


def write_csv(reader: pa.RecordBatchReader, out: IO[bytes]) -> int:
    """CSV: a header line, then rows; nested values as JSON text, NULL as empty, strings quoted
    only where they need it."""
    rows = 0
    out.write(csv_header(reader.schema.names))
    for batch in reader:
        if not batch.num_rows:
            continue
        texts = [csv_column(col) for col in flat_for_csv(batch).columns]
        lines = pc.binary_join_element_wise(
            *texts, ",", null_handling="replace", null_replacement=""
        )
        out.write(("\n".join(lines.to_pylist()) + "\n").encode())
        rows += batch.num_rows
    return rows


def write_ndjson(reader: pa.RecordBatchReader, out: IO[bytes]) -> int:
    rows = 0
    for batch in reader:
        lines = [json.dumps(row, ensure_ascii=False) for row in json_rows(batch)]
        if lines:
            out.write(("\n".join(lines) + "\n").encode())
        rows += batch.num_rows
    return rows


def write_json(reader: pa.RecordBatchReader, out: IO[bytes]) -> int:
    """A JSON array of objects, one per row, written batch by batch."""
    rows = 0
    out.write(b"[")
    for batch in reader:
        for row in json_rows(batch):
            out.write(
                (",\n" if rows else "\n").encode() + json.dumps(row, ensure_ascii=False).encode()
            )
            rows += 1
    out.write(b"\n]\n" if rows else b"]\n")
    return rows


def write_arrow(reader: pa.RecordBatchReader, out: IO[bytes]) -> int:
    rows = 0
    with ipc.new_stream(out, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def write_parquet(reader: pa.RecordBatchReader, out: IO[bytes]) -> int:
    rows = 0
    with pq.ParquetWriter(out, reader.schema, compression="zstd") as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


WRITERS: dict[str, Callable[[pa.RecordBatchReader, IO[bytes]], int]] = {
    "csv": write_csv,
    "json": write_json,
    "ndjson": write_ndjson,
    "arrow": write_arrow,
    "parquet": write_parquet,
}
