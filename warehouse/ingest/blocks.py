"""Text sources read in blocks of whole, numbered lines, as polars frames, and back to Arrow.

Line-oriented readers (sacct, pods, nccl-tests) share this: memory stays at one block whatever
the file's size, and every line keeps its 1-based number in the file for the rejects it causes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

import polars as pl
import pyarrow as pa

from warehouse.ingest.base import Reject

#: Bytes read at a time; a block is this much text rounded to whole lines.
BLOCK_BYTES = 16 << 20

_BOM = b"\xef\xbb\xbf"
# The one-column CSV trick below splits lines in Rust; it needs a byte the text does not hold.
_NO_SPLIT = b"\x1f"


def line_frames(stream: IO[bytes], block_bytes: int = BLOCK_BYTES) -> Iterator[pl.DataFrame]:
    """The stream's non-blank lines, a block at a time: columns `line` (1-based) and `text`.

    Line ends (`\\n` or `\\r\\n`) are dropped, invalid UTF-8 is replaced, a byte order mark at
    the start is skipped. Blank lines are left out but counted.

    >>> [f.rows() for f in line_frames(io.BytesIO(b"a|b\\r\\n\\n  \\nc\\nd"), block_bytes=8)]
    [[(1, 'a|b')], [(4, 'c')], [(5, 'd')]]
    """
    first = 1
    for data in _whole_lines(stream, block_bytes):
        text = _lines(data)
        frame = pl.DataFrame({"text": text}).with_row_index("line", offset=first)
        first += text.len()
        blank = frame.get_column("text").is_null() | (
            frame.get_column("text").str.strip_chars() == ""
        )
        if blank.any():
            frame = frame.filter(~blank)
        yield frame.with_columns(pl.col("line").cast(pl.Int64))


def _whole_lines(stream: IO[bytes], block_bytes: int) -> Iterator[bytes]:
    """Blocks of about `block_bytes` that end at a line end (the last may not)."""
    carry = b""
    first = True
    while True:
        data = stream.read(block_bytes)
        if not data:
            break
        if first:
            data = data.removeprefix(_BOM)
            first = False
        cut = data.rfind(b"\n")
        if cut < 0:
            carry += data
            continue
        # One copy of the block at most: the carried start of a line joined to the whole lines.
        whole = memoryview(data)[: cut + 1]
        block = b"".join((carry, whole)) if carry or cut + 1 < len(data) else data
        carry = data[cut + 1 :]
        yield block
    if carry:
        yield carry


def _lines(data: bytes) -> pl.Series:
    """One string per line of `data` (blank ones NULL or blank), split in Rust where possible."""
    if _NO_SPLIT in data:
        text = data.decode("utf-8", errors="replace").split("\n")
        if text[-1] == "":
            text.pop()
        return pl.Series("text", text, pl.String).str.strip_suffix("\r")
    return pl.read_csv(
        io.BytesIO(data),
        separator=_NO_SPLIT.decode(),
        has_header=False,
        quote_char=None,
        infer_schema=False,
        new_columns=["text"],
        encoding="utf8-lossy",
    ).get_column("text")


def arrow_rows(frame: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    """`frame` as an Arrow table of `schema`'s columns (less batch_id); absent ones are NULL."""
    fields = [f for f in schema if f.name != "batch_id"]
    arrays = []
    for field in fields:
        if field.name in frame.columns:
            # Newest: strings as views, no copy; the cast then copies once into the DDL's type.
            column = frame.get_column(field.name).to_arrow(compat_level=pl.CompatLevel.newest())
            arrays.append(column.cast(field.type))
        else:
            arrays.append(pa.nulls(frame.height, field.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class DistinctParser:
    """Run a Python parser once per distinct string of a source, not once per row or block.

    `parse` returns one value per `schema` column, or raises ValueError, whose message lands in
    the extra column `error` (the outputs are then NULL). Results are kept across blocks, up to
    `limit` distinct strings (then forgotten, so memory stays bounded). `bulk`, when given, parses
    the strings it can in one go, as polars expressions: it returns a frame of `_key` and the
    `schema` columns for those, and `parse` runs on the rest; both must agree where both apply.

    >>> numbers = DistinctParser(lambda v: (int(v),), {"n": pl.Int64})
    >>> numbers(pl.Series(["2", "x", None, "2"])).rows()
    [(2, None), (None, "invalid literal for int() with base 10: 'x'"), (None, None), (2, None)]
    >>> lengths = DistinctParser(lambda v: (len(v),), {"n": pl.Int64}, limit=2)
    >>> lengths(pl.Series(["a", "bb"])).rows(), lengths(pl.Series(["ccc", "a"])).rows()
    ([(1, None), (2, None)], [(3, None), (1, None)])
    """

    def __init__(
        self,
        parse: Callable[[str], tuple[Any, ...]],
        schema: dict[str, pl.DataType | type[pl.DataType]],
        limit: int = 250_000,
        bulk: Callable[[pl.Series], pl.DataFrame] | None = None,
    ) -> None:
        self._parse = parse
        self._bulk = bulk
        self._schema: dict[str, pl.DataType | type[pl.DataType]] = {**schema, "error": pl.String}
        self._limit = limit
        self._known = self._parsed(pl.Series("_key", [], pl.String))

    def __call__(self, values: pl.Series) -> pl.DataFrame:
        """One output row per value, in order; NULL values give NULL outputs."""
        keys = values.unique().drop_nulls()
        if self._known.height + keys.len() > self._limit:
            self._known = self._parsed(pl.Series("_key", [], pl.String))
        new = keys.filter(~keys.is_in(self._known.get_column("_key").implode()))
        if new.len():
            self._known = pl.concat([self._known, self._parsed(new)])
        return (
            values.alias("_key")
            .to_frame()
            .join(self._known, on="_key", how="left", maintain_order="left")
            .drop("_key")
        )

    def nulls(self, rows: int) -> pl.DataFrame:
        """What `__call__` gives for `rows` NULL values, without looking anything up."""
        return pl.DataFrame(schema=self._schema).clear(rows)

    def _parsed(self, keys: pl.Series) -> pl.DataFrame:
        if self._bulk is None or not keys.len():
            return self._parsed_one_by_one(keys)
        done = self._bulk(keys).with_columns(error=pl.lit(None, pl.String))
        done = done.select("_key", *(pl.col(n).cast(t) for n, t in self._schema.items()))
        rest = keys.filter(~keys.is_in(done.get_column("_key").implode()))
        return pl.concat([done, self._parsed_one_by_one(rest)]) if rest.len() else done

    def _parsed_one_by_one(self, keys: pl.Series) -> pl.DataFrame:
        columns: list[list[Any]] = [[] for _ in self._schema]
        nothing = (None,) * (len(self._schema) - 1)
        for key in keys.to_list():
            try:
                out = (*self._parse(key), None)
            except ValueError as error:
                out = (*nothing, str(error))
            for column, value in zip(columns, out, strict=True):
                column.append(value)
        return pl.DataFrame(
            [
                keys.alias("_key"),
                *(
                    pl.Series(name, column, dtype)
                    for (name, dtype), column in zip(self._schema.items(), columns, strict=True)
                ),
            ]
        )


def rejects_of(
    bad: pl.DataFrame, checks: Sequence[tuple[str, str, Callable[[dict[str, Any]], str]]]
) -> list[Reject]:
    """Rejects for rows that failed a check: the first failing check names field and reason.

    Args:
        bad: rows with columns `line`, `text` and one boolean column per check.
        checks: (field, flag column, reason from the row) in the order to report them.
    """
    rejects = []
    for row in bad.iter_rows(named=True):
        for field, flag, reason in checks:
            if row[flag]:
                rejects.append(Reject(row["line"], reason(row), row["text"], field))
                break
    return rejects
