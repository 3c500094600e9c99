"""DataRow messages for a whole Arrow batch at once.

A DataRow is 'D', int32 length, int16 column count, then per column int32 length (-1 for NULL)
and the value bytes. The lengths come from Arrow (`binary_length`), the header and length fields
are numpy big-endian arrays viewed as fixed-size binary, and one `binary_join_element_wise` call
concatenates header, lengths and values row by row: the result's data buffer *is* the wire bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from service.pgwire import arrays, small
from service.pgwire.binenc import encode_binary
from service.pgwire.textenc import encode_text

BIN = pa.binary()
Encoder = Callable[[pa.Array, int], pa.Array]

#: rows per DataRow block; keeps every intermediate far below Arrow's 2 GiB binary offsets
BLOCK_ROWS = 65_536


def encoders(formats: Sequence[int]) -> list[Encoder]:
    """The encoder per column for the result format codes (0 text, 1 binary)."""
    return [encode_binary if f == 1 else encode_text for f in formats]


def _fixed_binary(values: np.ndarray, width: int) -> pa.Array:
    raw = pa.py_buffer(np.ascontiguousarray(values).tobytes())
    return pa.Array.from_buffers(pa.binary(width), len(values), [None, raw]).cast(BIN)


def data_rows(
    batch: pa.RecordBatch, oids: Sequence[int], formats: Sequence[int]
) -> list[pa.Buffer]:
    """The DataRow messages for every row of `batch`, as a few contiguous buffers."""
    coders = encoders(formats)
    if batch.num_rows <= small.SMALL_ROWS:  # Python is the faster for a handful of rows
        return [small.data_rows(batch, oids, formats, coders)] if batch.num_rows else []
    out: list[pa.Buffer] = []
    for start in range(0, max(batch.num_rows, 1), BLOCK_ROWS):
        block = batch.slice(start, BLOCK_ROWS)
        if block.num_rows:
            out.append(_block(block, oids, coders))
    return out


def _block(block: pa.RecordBatch, oids: Sequence[int], coders: list[Encoder]) -> pa.Buffer:
    rows = block.num_rows
    ncols = block.num_columns
    total = np.full(rows, 4 + 2 + 4 * ncols, dtype=np.int64)
    pieces: list[pa.Array] = []
    for column, oid, coder in zip(block.columns, oids, coders, strict=True):
        values = coder(column, oid)
        lengths = arrays.lengths(values)
        total += np.maximum(lengths, 0)
        pieces.append(_fixed_binary(lengths.astype(">i4"), 4))
        pieces.append(values)
    header = np.empty(rows, dtype=[("kind", "S1"), ("length", ">i4"), ("columns", ">i2")])
    header["kind"] = b"D"
    header["length"] = total
    header["columns"] = ncols
    joined = pc.binary_join_element_wise(
        _fixed_binary(header, 7), *pieces, b"", null_handling="replace"
    )
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)
    begin, end = offsets[joined.offset], offsets[joined.offset + rows]
    return joined.buffers()[2].slice(int(begin), int(end - begin))
