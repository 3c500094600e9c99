"""`COPY (query) TO STDOUT` in text or CSV format, a batch at a time.

DuckDB's own COPY is not reachable from a server (external access is off), so the statement is
run as its query and the rows are framed here: text format escapes backslash, tab, newline and
carriage return and writes NULL as \\N; CSV quotes values that need it and leaves NULL empty.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from service.pgwire import codec
from service.pgwire.channel import Channel
from service.pgwire.portal import Portal
from service.pgwire.textenc import encode_text

BIN = pa.binary()
_TEXT_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def _text_field(values: pa.Array) -> pa.Array:
    text = values.cast(pa.string())
    for raw, escaped in _TEXT_ESCAPES:
        text = pc.replace_substring(text, raw, escaped)
    return text.fill_null("\\N").cast(BIN)


def _csv_field(values: pa.Array, oid: int) -> pa.Array:
    text = values.cast(pa.string())
    needs = pc.or_(pc.match_substring_regex(text, '[",\\n\\r]|^$|^\\s|\\s$'), pc.equal(text, "\\."))
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, text).fill_null("").cast(BIN)


def lines(batch: pa.RecordBatch, oids: list[int], csv: bool) -> bytes:
    """The COPY lines of one batch."""
    fields = []
    for column, oid in zip(batch.columns, oids, strict=True):
        encoded = encode_text(column, oid)
        fields.append(_csv_field(encoded, oid) if csv else _text_field(encoded))
    separator = b"," if csv else b"\t"
    if not fields:
        return b"\n" * int(batch.num_rows)
    joined = pc.binary_join_element_wise(*fields, separator)
    with_newline = pc.binary_join_element_wise(joined, pa.scalar(b"\n", BIN), b"")
    return b"".join(v for v in with_newline.to_pylist() if v is not None)


def header(names: list[str], csv: bool) -> bytes:
    if not csv:
        return ("\t".join(names) + "\n").encode()
    quoted = ['"' + n.replace('"', '""') + '"' if any(c in n for c in ',"\n') else n for n in names]
    return (",".join(quoted) + "\n").encode()


def _next_lines(portal: Portal, csv: bool) -> tuple[bytes, int] | None:
    batch = portal._next_batch()
    if batch is None:
        portal.exhausted = True
        return None
    return lines(batch, portal.oids, csv), batch.num_rows


async def send(conn: Channel, portal: Portal) -> int:
    """Stream the portal's rows as COPY data; return the row count."""
    options = portal.statement.copy
    assert options is not None and portal.schema is not None
    if options.format == "binary":
        raise ValueError("COPY TO STDOUT supports FORMAT text and csv (not binary)")
    csv = options.format == "csv"
    conn.writer.write(codec.copy_out_response(len(portal.schema)))
    if options.header:
        conn.writer.write(codec.copy_data(header(portal.schema.names, csv)))
    count = 0
    while True:
        chunk = await conn.call(_next_lines, portal, csv)
        if chunk is None:
            break
        data, rows = chunk
        conn.writer.write(codec.copy_data(data))
        count += rows
        await conn.writer.drain()
    conn.writer.write(codec.COPY_DONE)
    if conn.streaming is portal:
        conn.streaming = None
    return count
