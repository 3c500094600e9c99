"""HTTP renderers: a query `Result` in, chunks of one format's bytes out, one Arrow batch at a time.

Nothing holds the whole result: each batch is encoded and handed to the server as it arrives.
An error after the first byte cannot change the status code any more; JSON and NDJSON then end
with an `error` member/line, CSV, Arrow and Parquet end cut short (their readers notice).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from service.render import csv_header, flat_for_csv, json_value
from service.serve.session import Result
from warehouse.errors import WankaError

MEDIA_TYPES = {
    "json": "application/json",
    "ndjson": "application/x-ndjson",
    "csv": "text/csv; charset=utf-8",
    "arrow": "application/vnd.apache.arrow.stream",
    "parquet": "application/vnd.apache.parquet",
}
FORMATS = tuple(MEDIA_TYPES)


class _Sink(io.RawIOBase):
    """A write-only file that keeps what was written until `take()`."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


def json_column(column: pa.Array) -> list[Any]:
    """A column as JSON-ready values, converted by Arrow kernels where the type allows."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        spec = "%Y-%m-%dT%H:%M:%S%z" if kind.tz else "%Y-%m-%dT%H:%M:%S"
        column = pc.strftime(column, format=spec)
    elif pa.types.is_date(kind):
        column = pc.strftime(column, format="%Y-%m-%d")
    values: list[Any] = column.to_pylist()
    if pa.types.is_floating(kind) and pc.all(pc.is_finite(column)).as_py() not in (True, None):
        return [v if v is None or math.isfinite(v) else None for v in values]
    plain = pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_boolean(kind)
    if plain or pa.types.is_floating(kind) or pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return values
    return [json_value(v) for v in values]


def json_chunks(result: Result, head: list[pa.RecordBatch]) -> Iterator[bytes]:
    """`{"columns": [...], "rows": [[...], ...], "truncated", "rows_returned", "elapsed_ms"}`."""
    schema = result.reader.schema
    columns = [{"name": f.name, "type": str(f.type)} for f in schema]
    yield b'{"columns": ' + json.dumps(columns).encode() + b', "rows": ['
    count, error = 0, None
    try:
        for batch in _batches(result, head):
            if not batch.num_rows:
                continue
            values = [json_column(col) for col in batch.columns]
            rows = json.dumps(list(zip(*values, strict=True)), ensure_ascii=False)[1:-1]
            yield ((", " if count else "") + rows).encode()
            count += batch.num_rows
    except WankaError as failure:
        error = str(failure)
    tail = {
        "truncated": result.truncated,
        "rows_returned": count,
        "statement": result.statement,
        "rowcount": result.rowcount,
        "elapsed_ms": round(result.elapsed_ms, 3),
    }
    if error is not None:
        tail["error"] = error
    yield b"], " + json.dumps(tail).encode()[1:]


def ndjson_chunks(result: Result, head: list[pa.RecordBatch]) -> Iterator[bytes]:
    """One JSON object per row; a failure mid-stream ends with an `{"error": ...}` line."""
    try:
        for batch in _batches(result, head):
            names = batch.schema.names
            values = [json_column(col) for col in batch.columns]
            lines = [
                json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False)
                for row in zip(*values, strict=True)
            ]
            if lines:
                yield ("\n".join(lines) + "\n").encode()
    except WankaError as failure:
        yield json.dumps({"error": str(failure)}).encode() + b"\n"


def csv_chunks(result: Result, head: list[pa.RecordBatch]) -> Iterator[bytes]:
    """A header line, then rows; nested values as JSON text."""
    yield csv_header(result.reader.schema.names)
    sink = _Sink()
    options = pacsv.WriteOptions(include_header=False)
    for batch in _batches(result, head):
        pacsv.write_csv(flat_for_csv(batch), sink, write_options=options)
        yield sink.take()


def arrow_chunks(result: Result, head: list[pa.RecordBatch]) -> Iterator[bytes]:
    """An Arrow IPC stream: schema, then one message per batch, then the end marker."""
    sink = _Sink()
    with ipc.new_stream(sink, result.reader.schema) as writer:
        yield sink.take()
        for batch in _batches(result, head):
            writer.write_batch(batch)
            yield sink.take()
    yield sink.take()


def parquet_chunks(result: Result, head: list[pa.RecordBatch]) -> Iterator[bytes]:
    """A Parquet file, one row group per batch, written as the row groups complete."""
    sink = _Sink()
    with pq.ParquetWriter(sink, result.reader.schema, compression="zstd") as writer:
        for batch in _batches(result, head):
            writer.write_batch(batch)
            yield sink.take()
    yield sink.take()


def _batches(result: Result, head: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from head
    yield from result.reader


RENDERERS: dict[str, Callable[[Result, list[pa.RecordBatch]], Iterator[bytes]]] = {
    "json": json_chunks,
    "ndjson": ndjson_chunks,
    "csv": csv_chunks,
    "arrow": arrow_chunks,
    "parquet": parquet_chunks,
}


def read_head(result: Result) -> tuple[list[pa.RecordBatch], bool]:
    """The first batches, read before answering so an early failure still gets its status
    code; and whether they are the whole result (then it is answered in one piece)."""
    batches: list[pa.RecordBatch] = []
    for _ in range(2):  # a second read says whether the first batch was the last
        try:
            batches.append(result.reader.read_next_batch())
        except StopIteration:
            return batches, True
    return batches, False
