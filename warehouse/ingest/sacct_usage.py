"""What sacct says a job's GPUs did: `gres/gpuutil` and `gres/gpumem` of TRESUsageInAve and
TRESUsageInMax, which Slurm >= 23.02 built with NVML reports per step.

    TRESUsageInAve  cpu=00:52:45,energy=0,fs/disk=5071,gres/gpumem=21794M,gres/gpuutil=99,...

`gres/gpuutil` is a percentage, printed as a whole number; `gres/gpumem` is bytes printed the
way Slurm prints sizes (`21794M`, `1.50G`, `512`; 1024-based), stored in MiB. The job line of a
dump carries no usage of its own as a rule, so a job takes, column by column, the value of its
longest-running step that has one (the job line's own value first, where it has one).

sacct prints a job's steps right after it. A block of lines may end inside a job, so the lines
of the job a block ends with are carried over to the next block (`split_tail`), and every step
is seen with its job. Steps printed far from their job (a dump sorted some other way) still load,
but lend their usage to the job only within the block that holds both.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import polars as pl

from warehouse.ingest.slurm_values import SIZE, unreadable

#: (column, TRES entry, sacct role)
USAGE = (
    ("gpu_util_ave", "gres/gpuutil", "usage_ave"),
    ("gpu_util_max", "gres/gpuutil", "usage_max"),
    ("gpu_mem_ave_mib", "gres/gpumem", "usage_ave"),
    ("gpu_mem_max_mib", "gres/gpumem", "usage_max"),
)
COLUMNS = tuple(column for column, _, _ in USAGE)
ROLES = ("usage_ave", "usage_max")
_UNITS = {"": 1.0, "K": 2.0**10, "M": 2.0**20, "G": 2.0**30, "T": 2.0**40, "P": 2.0**50}
_WHAT = {
    "gres/gpuutil": "not a percentage like 45",
    "gres/gpumem": "not a size like 21794M",
}


def tres_value(raw: pl.Expr, key: str) -> pl.Expr:
    """The text of one entry of a TRES list; NULL where the list has no such entry."""
    return raw.str.extract(r"(?:^|,)" + re.escape(key) + r"=([^,]*)", 1)


def size_mib(raw: pl.Expr) -> pl.Expr:
    """`21794M`, `1.50G`, `512` (bytes) in MiB; anything else NULL."""
    parts = raw.str.strip_chars().str.extract_groups(SIZE)
    unit = parts.struct.field("u").replace_strict(_UNITS, default=None, return_dtype=pl.Float64)
    return parts.struct.field("n").cast(pl.Float64) * unit / _UNITS["M"]


def columns(r: dict[str, pl.Expr]) -> dict[str, pl.Expr]:
    """The four usage columns from the raw text of the TRESUsageIn roles (`r`)."""
    return {
        column: (
            tres_value(r[role], key).str.strip_chars().cast(pl.Float64, strict=False)
            if key == "gres/gpuutil"
            else size_mib(tres_value(r[role], key))
        )
        for column, key, role in USAGE
    }


def checks(
    r: dict[str, pl.Expr], present: set[str]
) -> list[tuple[str, pl.Expr, Callable[[dict[str, Any]], str]]]:
    """(role, True where an entry is there but does not read, its reason), for present roles."""

    def why(role: str, key: str) -> Callable[[dict[str, Any]], str]:
        def reason(row: dict[str, Any]) -> str:
            found = re.search(r"(?:^|,)" + re.escape(key) + r"=([^,]*)", row[f"raw_{role}"])
            return f"{key} {found.group(1) if found else ''!r} is {_WHAT[key]}"

        return reason

    return [
        (role, unreadable(tres_value(r[role], key), pl.col(column)), why(role, key))
        for column, key, role in USAGE
        if role in present
    ]


def from_longest_step(jobs: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """`jobs` with each missing usage value taken from the job's longest step that has it.

    >>> jobs = pl.DataFrame({"job_id": ["1"], "gpu_util_ave": [None], "gpu_util_max": [90.0]},
    ...                     schema_overrides={"gpu_util_ave": pl.Float64})
    >>> steps = pl.DataFrame({"job_id": ["1", "1"], "line": [2, 3], "elapsed_s": [60.0, 600.0],
    ...                       "gpu_util_ave": [10.0, 40.0], "gpu_util_max": [99.0, 50.0]})
    >>> from_longest_step(jobs, steps).rows()
    [('1', 40.0, 90.0)]
    """
    wanted = [c for c in COLUMNS if c in jobs.columns]
    if not steps.height or not wanted:
        return jobs
    longest = steps.sort(["elapsed_s", "line"], descending=[True, False], nulls_last=True)
    best = longest.group_by("job_id", maintain_order=True).agg(
        pl.col(c).drop_nulls().first().alias(f"_step_{c}") for c in wanted
    )
    joined = jobs.join(best, on="job_id", how="left", maintain_order="left")
    return joined.with_columns(pl.coalesce(c, f"_step_{c}").alias(c) for c in wanted).drop(
        f"_step_{c}" for c in wanted
    )


def split_tail(lines: pl.DataFrame, position: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`lines` cut before the run of lines, at its end, of the job its last line belongs to.

    `position` is the JobID field's place in a line; the job is what comes before the step's dot.

    >>> lines = pl.DataFrame({"line": [1, 2, 3], "text": ["7|a", "8|b", "8.0|c"]})
    >>> [part.get_column("line").to_list() for part in split_tail(lines, 0)]
    [[1], [2, 3]]
    """
    job = lines.get_column("text").str.split("|").list.get(position, null_on_oob=True)
    job = job.str.replace(r"\..*$", "")
    last = job[-1]
    differs = (job != last).fill_null(True) if last is not None else job.is_not_null()
    kept = differs.arg_true()
    cut = int(kept[-1]) + 1 if kept.len() else 0
    return lines.slice(0, cut), lines.slice(cut)
