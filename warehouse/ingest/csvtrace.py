"""Plain CSV traces with a header line and no quoting: the shape published cluster traces share.

A trace reader names the columns it needs; this module splits each block of lines into one text
column per header column (`raw_<name>`), rejects lines with another number of fields, and turns
text into numbers and times, rejecting the lines whose values do not read, with the field named.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

import polars as pl

from warehouse.errors import UserError
from warehouse.ingest import blocks
from warehouse.ingest.base import Reject, Source


@dataclass
class Block:
    """One block of a trace: `rows` has `line` and `raw_<column>` per header column."""

    rows: pl.DataFrame
    lines: pl.DataFrame  # `line`, `text`: the raw lines, for rejects
    rejects: list[Reject] = field(default_factory=list)


def blocks_of(
    stream: IO[bytes], source: Source, needed: tuple[str, ...], what: str
) -> Iterator[Block]:
    """The trace's lines split by its header; the header must name every column in `needed`."""
    columns: list[str] | None = None
    for lines in blocks.line_frames(stream):
        if columns is None:
            if lines.height == 0:
                continue
            columns = [c.strip().lower() for c in lines.item(0, "text").split(",")]
            if not set(needed) <= set(columns):
                raise UserError(
                    f"{source.name}: expected {what} with a header line naming "
                    f"{','.join(needed)}, found {lines.item(0, 'text')[:120]!r}"
                )
            lines = lines.slice(1)
        yield _split(lines, columns)


def _split(lines: pl.DataFrame, columns: list[str]) -> Block:
    n = len(columns)
    fields = pl.col("text").str.split_exact(",", n)
    split = lines.select("line", fields.alias("f"))
    rows = split.select(
        "line",
        pl.col("f").struct.field(f"field_{n - 1}").is_not_null().alias("fits"),
        pl.col("f").struct.field(f"field_{n}").is_null().alias("not_over"),
        *(
            pl.col("f").struct.field(f"field_{i}").str.strip_chars().alias(f"raw_{c}")
            for i, c in enumerate(columns)
        ),
    )
    ok = pl.col("fits") & pl.col("not_over")
    bad = rows.filter(~ok).join(lines, on="line", how="left")
    rejects = [
        Reject(r["line"], f"expected {n} comma-separated fields as the header names", r["text"])
        for r in bad.iter_rows(named=True)
    ]
    return Block(rows.filter(ok).drop("fits", "not_over"), lines, rejects)


def number(column: str) -> pl.Expr:
    """The column's text as a DOUBLE; empty text is NULL."""
    raw = pl.col(f"raw_{column}")
    return pl.when(raw != "").then(raw).cast(pl.Float64, strict=False)


def epoch_time(seconds: pl.Expr) -> pl.Expr:
    """Seconds since 1970 (fractions kept to the microsecond) as a UTC timestamp."""
    return (seconds * 1_000_000).round(0).cast(pl.Int64).cast(pl.Datetime("us", "UTC"))


def local_time(column: str, timezone: str) -> pl.Expr:
    """`YYYY-MM-DD HH:MM:SS` text in `timezone` as a UTC timestamp; text that does not read is
    NULL."""
    zoneinfo.ZoneInfo(timezone)  # an unknown zone fails here, naming itself
    parsed = pl.col(f"raw_{column}").str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False)
    return parsed.dt.replace_time_zone(timezone).dt.convert_time_zone("UTC")


def keep_good(
    block: Block, typed: pl.DataFrame, checks: list[tuple[str, pl.Expr, str]]
) -> pl.DataFrame:
    """`typed` less the lines a check flags; each flagged line becomes a reject naming the
    first check it fails (field, what was wrong, the raw value)."""
    flags = typed.select(
        *(flag.fill_null(True).alias(f"bad_{i}") for i, (_, flag, _) in enumerate(checks))
    )
    bad_rows = flags.select(pl.any_horizontal(pl.all())).to_series()
    if not bad_rows.any():
        return typed
    bad = pl.concat([typed, flags], how="horizontal").filter(bad_rows)
    bad = bad.join(block.lines.select("line", pl.col("text").alias("_raw")), on="line", how="left")
    for row in bad.iter_rows(named=True):
        i = next(i for i in range(len(checks)) if row[f"bad_{i}"])
        column, _, what = checks[i]
        reason = f"{column}: {what}: {row.get(f'raw_{column}')!r}"
        block.rejects.append(Reject(row["line"], reason, row["_raw"], column))
    block.rejects.sort(key=lambda r: r.line or 0)
    return typed.filter(~bad_rows)
