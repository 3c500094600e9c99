"""Slurm accounting, as `sacct --parsable2` (or `--parsable`) prints it → `jobs` and `job_steps`.

    sacct --allusers --parsable2 --format=JobID,JobName,User,Account,Partition,QOS,Submit,
        Eligible,Start,End,Elapsed,State,ExitCode,DerivedExitCode,AllocNodes,AllocCPUS,
        AllocTRES,NodeList[,Timelimit,TRESUsageInAve,TRESUsageInMax] --starttime=...

`123`, array tasks `123_4`, pending arrays `123_[1-5]` and het components `123+0` are jobs;
`123.batch`, `123.extern`, `123.0`, `123_4.0` are steps of them. A header line, when there is
one, names the fields (over `--columns`); without one, `--columns` does, else the layout of the
shared sample dump (see `sacct_layout`). Times are wall-clock times in `--timezone`. Timelimit
(`UNLIMITED` and `Partition_Limit` are NULL) and the GPU usage of TRESUsageInAve/Max (see
`sacct_usage`) are read where the output has them.

A block of lines is read as one polars frame of `|`-split text and converted column by column;
Python runs only once per distinct host list or TRES string in the file. A line with the wrong
number of fields or a value that does not parse is rejected whole, with its number and the field
at fault; the rest of the file loads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any

import polars as pl

from warehouse.ingest import blocks, sacct_layout, sacct_usage
from warehouse.ingest import slurm_values as sv
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register
from warehouse.ingest.sacct_layout import ROLES, Layout
from warehouse.jobs import hostlist

JOB_COLUMNS = (
    "job_id", "job_name", "user", "account", "partition", "qos", "cluster", "submit_at",
    "eligible_at", "start_at", "end_at", "elapsed_s", "state", "state_reason", "gpus",
    "gpu_type", "nodes", "node_list", "cpus", "exit_code", "derived_exit_code", "time_limit_s",
    *sacct_usage.COLUMNS,
)  # fmt: skip
STEP_COLUMNS = (
    "job_id", "step_id", "step_name", "start_at", "end_at", "elapsed_s", "state", "state_reason",
    "gpus", "nodes", "node_list", "cpus", "exit_code", "max_rss_bytes", "total_cpu_s",
    *sacct_usage.COLUMNS,
)  # fmt: skip
_TIMES = {"submit": "submit_at", "eligible": "eligible_at", "start": "start_at", "end": "end_at"}

#: (sacct field, True where a line fails, the reason given the failing row)
Check = tuple[str, pl.Expr, Callable[[dict[str, Any]], str]]


@register("sacct", "Slurm sacct --parsable2 output")
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Jobs and steps, a chunk of each per block of lines; see the module docstring."""
    timezone = sv.zone(options.timezone, "sacct")
    reader: _Reader | None = None
    carried: pl.DataFrame | None = None  # the lines of the job the last block ended in
    for lines in blocks.line_frames(stream):
        if lines.height == 0:
            continue
        if reader is None:
            layout = sacct_layout.from_header(lines.item(0, "text"))
            layout = layout or sacct_layout.from_options(options.columns)
            reader = _Reader(layout, options, context, timezone)
        if reader.usage:  # a job lends its steps' usage: keep its lines in one block
            lines = lines if carried is None else pl.concat([carried, lines])
            lines, carried = sacct_usage.split_tail(lines, reader.index["job_id"])
            if lines.height == 0:
                continue
        yield from reader.read(lines)
    if reader is not None and carried is not None and carried.height:
        yield from reader.read(carried)


class _Reader:
    """What one source's blocks share: its layout, the checks it implies, the parser caches."""

    def __init__(self, layout: Layout, options: ReadOptions, context: ReadContext, tz: str):
        self.layout = layout
        self.index = layout.index()
        self.options = options
        self.context = context
        self.tz = tz
        self.checks = _checks(layout, self.index)
        self.usage = any(role in self.index for role in sacct_usage.ROLES)
        self.tres = blocks.DistinctParser(
            sv.gpus_from_tres, {"tres_gpus": pl.Int32, "tres_type": pl.String}
        )
        self.gres = blocks.DistinctParser(
            sv.gpus_from_gres, {"gres_gpus": pl.Int32, "gres_type": pl.String}
        )
        self.hosts = blocks.DistinctParser(
            _node_list, {"node_list": pl.List(pl.String)}, bulk=sv.node_lists
        )

    def read(self, lines: pl.DataFrame) -> Iterator[Parsed]:
        if self.layout.header is not None:
            lines = lines.filter(pl.col("text") != self.layout.header)  # and where it repeats
        raw, rejects = self._split(lines)
        flags = [check.alias(f"bad_{i}") for i, (_, check, _) in enumerate(self.checks)]
        raw = pl.concat([raw, self._lookups(raw)], how="horizontal")
        typed = _typed(raw, _raw(self.index), self.options, self.tz)
        typed = typed.with_columns(flags)
        is_bad = pl.any_horizontal(pl.lit(False), *(f"bad_{i}" for i in range(len(flags))))
        bad_rows = typed.select(is_bad).to_series()
        if bad_rows.any():
            bad = typed.filter(bad_rows).join(lines, on="line", how="left")
            named = [(field, f"bad_{i}", why) for i, (field, _, why) in enumerate(self.checks)]
            rejects = sorted(rejects + blocks.rejects_of(bad, named), key=lambda r: r.line or 0)
            typed = typed.filter(~bad_rows)
        # The same job twice in one dump (requeued, or `--duplicates`): the last line is latest.
        if typed.get_column("raw_job_id").n_unique() < typed.height:
            typed = typed.filter(pl.col("raw_job_id").is_last_distinct())
        is_step = typed.get_column("step_id").is_not_null()
        jobs = typed.filter(~is_step).select(
            *JOB_COLUMNS[:1], pl.col("name").alias("job_name"), *JOB_COLUMNS[2:]
        )
        if self.usage:
            jobs = sacct_usage.from_longest_step(jobs, typed.filter(is_step))
        yield Parsed("jobs", blocks.arrow_rows(jobs, self.context.schema("jobs")), rejects)
        steps = typed.filter(is_step).select(
            *STEP_COLUMNS[:2], pl.col("name").alias("step_name"), *STEP_COLUMNS[3:]
        )
        if steps.height:
            yield Parsed("job_steps", blocks.arrow_rows(steps, self.context.schema("job_steps")))

    def _split(self, lines: pl.DataFrame) -> tuple[pl.DataFrame, list[Reject]]:
        """Lines with the right number of fields, one column per role; rejects for the others."""
        layout, n = self.layout, len(self.layout.names)
        split = lines.select("line", pl.col("text").str.split_exact("|", n + 1).alias("fields"))

        def field(i: int) -> pl.Expr:
            return pl.col("fields").struct.field(f"field_{i}")

        # `--parsable` ends each line with `|`: one more, empty, field.
        fits = (
            field(layout.min_fields - 1).is_not_null()
            & field(n + 1).is_null()
            & (field(n).is_null() | (field(n) == ""))
        )
        raw = split.select(
            "line",
            fits.alias("fits"),
            *(field(i).alias(f"raw_{role}") for role, i in self.index.items()),
        )
        if raw.get_column("fits").all():
            return raw, []
        misfits = lines.filter(~raw.get_column("fits"))
        counts = misfits.get_column("text").str.count_matches("|", literal=True) + 1
        rejects = [
            Reject(line, f"expected {layout.expected} fields separated by '|', found {count}", text)
            for (line, text), count in zip(misfits.iter_rows(), counts, strict=True)
        ]
        return raw.filter(pl.col("fits")), rejects

    def _lookups(self, raw: pl.DataFrame) -> pl.DataFrame:
        """GPUs and host names, parsed once per distinct TRES, GRES and NodeList string."""
        text = {role: sv.blank_to_null(raw) for role, raw in _raw(self.index).items()}
        keys = raw.select(
            tres=pl.coalesce(text["alloc_tres"], text["req_tres"]),
            gres=pl.coalesce(text["alloc_gres"], text["req_gres"]),
            hosts=text["node_list"],
        )
        parts = []
        for key, parser, roles in (
            ("tres", self.tres, ("alloc_tres", "req_tres")),
            ("gres", self.gres, ("alloc_gres", "req_gres")),
            ("hosts", self.hosts, ("node_list",)),
        ):
            if any(role in self.index for role in roles):
                parts.append(parser(keys.get_column(key)).rename({"error": f"{key}_error"}))
            else:
                parts.append(parser.nulls(raw.height).rename({"error": f"{key}_error"}))
        return pl.concat(parts, how="horizontal")


def _raw(index: dict[str, int]) -> dict[str, pl.Expr]:
    """The raw text of each role: its column, or NULL where the layout has no such field."""
    return {
        role: pl.col(f"raw_{role}") if role in index else pl.lit(None, pl.String) for role in ROLES
    }


def _typed(raw: pl.DataFrame, r: dict[str, pl.Expr], options: ReadOptions, tz: str) -> pl.DataFrame:
    """The table columns, from the raw text of each role (`r`) and the parsed lookups."""
    job_id, step_id = sv.job_and_step(r["job_id"])
    state, state_reason = sv.state_and_reason(r["state"])
    return raw.with_columns(
        job_id=job_id,
        step_id=step_id,
        name=sv.blank_to_null(r["name"]),
        user=sv.blank_to_null(r["user"]),
        account=sv.blank_to_null(r["account"]),
        partition=sv.blank_to_null(r["partition"]),
        qos=sv.blank_to_null(r["qos"]),
        cluster=pl.coalesce(sv.blank_to_null(r["cluster"]), pl.lit(options.cluster, pl.String)),
        **{column: sv.timestamp(r[role], tz) for role, column in _TIMES.items()},
        elapsed_s=pl.coalesce(
            sv.duration_s(r["elapsed"]), r["elapsed_raw"].str.to_integer(strict=False)
        ),
        state=state,
        state_reason=state_reason,
        exit_code=sv.blank_to_null(r["exit_code"]),
        derived_exit_code=sv.blank_to_null(r["derived_exit_code"]),
        nodes=sv.integer(r["nodes"]),
        cpus=sv.integer(r["cpus"]),
        max_rss_bytes=sv.size_bytes(r["max_rss"]),
        total_cpu_s=sv.duration_s(r["total_cpu"]),
        gpus=pl.coalesce("tres_gpus", "gres_gpus"),
        gpu_type=pl.coalesce("tres_type", "gres_type"),
        time_limit_s=sv.time_limit_s(r["time_limit"]),
        **sacct_usage.columns(r),
    )


def _checks(layout: Layout, index: dict[str, int]) -> list[Check]:
    """The checks a line of this layout must pass, in the order a reject reports them."""
    r = _raw(index)

    def said(role: str, what: str) -> Callable[[dict[str, Any]], str]:
        return lambda row: f"{what}: {row[f'raw_{role}']!r}"

    def error(column: str) -> Callable[[dict[str, Any]], str]:
        return lambda row: str(row[column])

    wanted: list[tuple[str, pl.Expr, Callable[[dict[str, Any]], str]]] = [
        ("job_id", pl.col("job_id").is_null(), said("job_id", "not a Slurm job id")),
        (
            "state",
            pl.col("state").is_not_null() & ~pl.col("state").is_in(sv.BASE_STATES),
            said("state", "not a Slurm job state"),
        ),
        *(
            (
                role,
                sv.unreadable_time(r[role], pl.col(column)),
                said(role, "not a time like 2022-02-18T17:32:41"),
            )
            for role, column in _TIMES.items()
        ),
        *(
            (role, sv.unreadable(r[role], pl.col(column)), said(role, what))
            for role, column, what in (
                ("elapsed", "elapsed_s", "not a duration [D-]HH:MM:SS"),
                ("elapsed_raw", "elapsed_s", "not a number of seconds"),
                ("nodes", "nodes", "not a whole number"),
                ("cpus", "cpus", "not a whole number"),
                ("max_rss", "max_rss_bytes", "not a size like 114944K"),
                ("total_cpu", "total_cpu_s", "not a duration [D-]HH:MM:SS or MM:SS.mmm"),
            )
        ),
        *(
            (
                role,
                pl.col(role).is_not_null() & ~pl.col(role).str.contains(sv.EXIT_CODE),
                said(role, "not an exit code like 0:0"),
            )
            for role in ("exit_code", "derived_exit_code")
        ),
        (
            "time_limit",
            sv.unreadable_limit(r["time_limit"], pl.col("time_limit_s")),
            said("time_limit", "not a time limit like 1-00:00:00, 30 (minutes) or UNLIMITED"),
        ),
        *sacct_usage.checks(r, set(index)),
    ]
    checks: list[Check] = [
        (layout.names[index[role]], check, why) for role, check, why in wanted if role in index
    ]
    for roles, column in (
        (("alloc_tres", "req_tres"), "tres_error"),
        (("alloc_gres", "req_gres"), "gres_error"),
        (("node_list",), "hosts_error"),
    ):
        present = [role for role in roles if role in index]
        if present:
            checks.append(
                (layout.names[index[present[0]]], pl.col(column).is_not_null(), error(column))
            )
    return checks


def _node_list(text: str) -> tuple[list[str] | None]:
    """Host names of a sacct NodeList; `None assigned` (never started) is NULL."""
    return (hostlist.expand(text) or None,)
