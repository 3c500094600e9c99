"""Kubernetes pod lists as the Alibaba GPU cluster trace (cluster-trace-gpu-v2023) gives them
→ `pods`.

    name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
    deletion_time,scheduled_time
    openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497

Times are seconds from the start of the trace, so the wall-clock start must be given
(`--trace-start`). `gpu_milli` is the share of each GPU (1000 = whole), so the GPUs a pod holds
are num_gpu × gpu_milli / 1000. `gpu_spec` lists the models a pod may run on, `|`-separated;
empty (or pandas' `nan`) means any. A pod never scheduled (phase Pending) has no
scheduled_time; a zero scheduled or deletion time on a pod created later is the same "never"
written as a number, and is NULL too. Extra columns `namespace` and `node` (or `node_name`) are
kept when present; others are ignored.
"""

from __future__ import annotations

import csv
import zoneinfo
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

import polars as pl

from warehouse.errors import UserError
from warehouse.ingest import blocks
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register

#: Column of the pod list -> column of `pods` (where the names differ).
ALIASES = {"node_name": "node", "nodename": "node", "pod_name": "name"}
WHOLE = {"cpu_milli": pl.Int64, "memory_mib": pl.Int64, "num_gpu": pl.Int32, "gpu_milli": pl.Int32}
TIMES = {
    "creation_time": "created_at",
    "scheduled_time": "scheduled_at",
    "deletion_time": "deleted_at",
}
TEXT = ("namespace", "node", "qos", "pod_phase")
_NOTHING = ("", "nan", "NaN", "None", "null")


@register(
    "pods", "a Kubernetes pod list CSV (Alibaba GPU trace: name,cpu_milli,...,scheduled_time)"
)
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Pods, a chunk per block of lines; see the module docstring."""
    start = _trace_start(options)
    schema = context.schema("pods")
    columns: list[str] | None = None
    for lines in blocks.line_frames(stream):
        if columns is None:
            if lines.height == 0:
                continue
            columns = _header(lines.item(0, "text"), source)
            lines = lines.slice(1)
        rows, rejects = _split(lines, columns)
        frame, rejects = _convert(rows, rejects, start, options, lines)
        yield Parsed("pods", blocks.arrow_rows(frame, schema), rejects)


def _trace_start(options: ReadOptions) -> datetime:
    start = options.trace_start
    if start is None:
        raise UserError("pods: times are relative to the trace start: pass --trace-start")
    if start.tzinfo is None:
        start = start.replace(tzinfo=zoneinfo.ZoneInfo(options.timezone))
    return start


def _header(line: str, source: Source) -> list[str]:
    try:
        fields = next(csv.reader([line]))
    except csv.Error as error:  # e.g. a bare carriage return inside the line
        raise UserError(f"{source.name}: line 1: the header is not CSV ({error})") from None
    names = [ALIASES.get(n.strip().lower(), n.strip().lower()) for n in fields]
    if "name" not in names:
        raise UserError(
            f"{source.name}: expected a pod list with a header line naming its columns "
            f"(name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
            f"deletion_time,scheduled_time), found {line[:120]!r}"
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(
            f"{source.name}: line 1: the header names {', '.join(map(repr, twice))} twice"
        )
    return names


def _split(lines: pl.DataFrame, columns: list[str]) -> tuple[pl.DataFrame, list[Reject]]:
    """One text column per CSV column; lines with another number of fields are rejected."""
    n = len(columns)
    quoted = lines.get_column("text").str.contains('"', literal=True)
    plain = lines.filter(~quoted)
    fields = pl.col("text").str.split_exact(",", n)
    split = plain.select("line", "text", fields.alias("f"))
    rows = split.select(
        "line",
        pl.col("f").struct.field(f"field_{n - 1}").is_not_null().alias("fits"),
        pl.col("f").struct.field(f"field_{n}").is_null().alias("not_over"),
        *(pl.col("f").struct.field(f"field_{i}").alias(f"raw_{c}") for i, c in enumerate(columns)),
    )
    if quoted.any():  # CSV quoting: rare in pod lists, so parsed line by line
        rows = pl.concat([rows, _quoted(lines.filter(quoted), columns)]).sort("line")
    ok = pl.col("fits") & pl.col("not_over")
    bad = rows.filter(~ok).join(lines, on="line", how="left")
    rejects = [
        Reject(r["line"], f"expected {n} comma-separated fields as the header names", r["text"])
        for r in bad.iter_rows(named=True)
    ]
    return rows.filter(ok).drop("fits", "not_over"), rejects


def _quoted(lines: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    records: list[dict[str, Any]] = []
    for line, text in lines.iter_rows():
        try:
            values = next(csv.reader([text]))
        except csv.Error:  # not CSV (a bare carriage return, ...): rejected as misshapen
            values = []
        record: dict[str, Any] = {"line": line, "fits": len(values) >= len(columns)}
        record["not_over"] = len(values) <= len(columns)
        raw = [f"raw_{c}" for c in columns]
        record.update(zip(raw, values + [None] * len(columns), strict=False))
        records.append(record)
    schema = {"line": pl.Int64, "fits": pl.Boolean, "not_over": pl.Boolean}
    return pl.DataFrame(records, schema={**schema, **{f"raw_{c}": pl.String for c in columns}})


def _convert(
    rows: pl.DataFrame,
    rejects: list[Reject],
    start: datetime,
    options: ReadOptions,
    lines: pl.DataFrame,
) -> tuple[pl.DataFrame, list[Reject]]:
    """Typed `pods` columns; lines with a value that does not read are rejected."""
    present = {c.removeprefix("raw_") for c in rows.columns}

    def text(column: str) -> pl.Expr:
        if column not in present:
            return pl.lit(None, pl.String)
        raw = pl.col(f"raw_{column}").str.strip_chars()
        return pl.when(~raw.is_in(_NOTHING)).then(raw)

    numbers = {c: text(c).cast(pl.Float64, strict=False) for c in (*WHOLE, *TIMES)}
    start_us = int(start.timestamp() * 1_000_000)
    created = numbers["creation_time"]

    def when(seconds: pl.Expr, column: str) -> pl.Expr:
        # A zero on a pod created after the trace began is "never", not "at the start".
        never = (seconds == 0) & (created > 0) if column != "creation_time" else pl.lit(False)
        micros = (seconds * 1_000_000).round(0).cast(pl.Int64) + start_us
        return pl.when(~never).then(micros.cast(pl.Datetime("us", "UTC")))

    spec = text("gpu_spec")
    typed = rows.with_columns(
        name=text("name"),
        **{c: text(c) for c in TEXT},
        cluster=pl.lit(options.cluster, pl.String),
        **{c: numbers[c].cast(t, strict=False) for c, t in WHOLE.items()},
        gpus=numbers["num_gpu"] * numbers["gpu_milli"].fill_null(1000.0) / 1000.0,
        gpu_spec=pl.when(spec.is_null())
        .then(pl.lit([], pl.List(pl.String)))
        .otherwise(spec.str.split("|")),
        **{column: when(numbers[c], c) for c, column in TIMES.items()},
    )
    checks = [("name", text("name").is_null(), "no pod name")]
    for c in (*WHOLE, *TIMES):
        if c in present:
            unread = text(c).is_not_null() & numbers[c].is_null()
            checks.append((c, unread, "not a number"))
            if c in WHOLE:
                checks.append((c, numbers[c] != numbers[c].round(0), "not a whole number"))
    flags = typed.select(
        *(flag.fill_null(False).alias(f"bad_{i}") for i, (_, flag, _) in enumerate(checks))
    )
    bad_rows = flags.select(pl.any_horizontal(pl.all())).to_series()
    if bad_rows.any():
        bad = pl.concat([typed, flags], how="horizontal").filter(bad_rows)
        bad = bad.join(lines.select("line", pl.col("text").alias("_raw")), on="line", how="left")
        for row in bad.iter_rows(named=True):
            i = next(i for i in range(len(checks)) if row[f"bad_{i}"])
            column, _, what = checks[i]
            value = row.get(f"raw_{column}") if column != "name" else None
            reason = f"{column}: {what}" + (f": {value!r}" if value is not None else "")
            rejects.append(Reject(row["line"], reason, row["_raw"], column))
        typed = typed.filter(~bad_rows)
    rejects.sort(key=lambda r: r.line or 0)
    # The same pod twice in one list: the later line wins, as a later list would.
    if typed.get_column("name").is_duplicated().any():
        typed = typed.filter(pl.col("name").is_last_distinct())
    return typed, rejects
