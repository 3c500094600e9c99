"""How sacct writes its values, and how to read them: polars expressions over whole columns,
plus the few parsers (TRES, GRES) that run once per distinct string.

Every expression reading a column gives NULL where the text does not parse; the reader compares
that with the raw text to tell "empty" from "unreadable" and reject the line.
"""

from __future__ import annotations

import re
import zoneinfo

import polars as pl

from warehouse.errors import UserError

#: Slurm's base job states (`sacct --helpformat`, `squeue` JOB STATE CODES).
BASE_STATES = (
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED",
    "LAUNCH_FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "POWER_UP_NODE", "PREEMPTED",
    "RECONFIG_FAIL", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "RESV_DEL_HOLD",
    "REVOKED", "RUNNING", "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED",
    "TIMEOUT", "UPDATE_DB",
)  # fmt: skip

#: What sacct prints for a time that has not happened (or never will).
NO_TIME = ("", "Unknown", "None", "N/A")
#: What sacct's Timelimit and scontrol's TimeLimit print for no limit of the job's own.
NO_LIMIT = ("UNLIMITED", "Partition_Limit")

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"

# `123`, array task `123_4`, pending array `123_[1-5%2]`, het component `123+0`; then `.step`.
JOB_ID = r"^(?P<job>\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?)(?:\.(?P<step>[A-Za-z0-9_+-]+))?$"
# [D-]HH:MM:SS, MM:SS, MM:SS.mmm, HH:MM:SS.mmm
DURATION = r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+(?:\.\d+)?)$"
# 114944K, 0.07M, 2G, 1248 (bytes)
SIZE = r"^(?P<n>\d+(?:\.\d+)?)(?P<u>[KMGTPE]?)$"
EXIT_CODE = r"^\d+:\d+$"
# The usual shapes of the above, ASCII only: read without capture groups (see their readers).
_CLOCK = r"^(?:[0-9]{1,9}-)?[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$"
_PLAIN_JOB_ID = r"^[0-9]+(?:_[0-9]+)?(?:\.[A-Za-z0-9_+-]+)?$"

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_GRES_INDEX = re.compile(r"\([^)]*\)")


def zone(name: str, reader: str) -> str:
    """`name` if it is a time zone (times without one are read in it), else a usage error.

    >>> zone("Europe/Berlin", "sacct")
    'Europe/Berlin'
    """
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise UserError(
            f"{reader}: unknown time zone {name!r} (an IANA name such as UTC or Europe/Berlin)"
        ) from None
    return name


def blank_to_null(raw: pl.Expr) -> pl.Expr:
    """Text as given, '' as NULL."""
    return pl.when(raw != "").then(raw)


def timestamp(raw: pl.Expr, timezone: str) -> pl.Expr:
    """sacct's `2022-02-18T17:32:41`, wall-clock time in `timezone`, as a UTC timestamp.

    A wall-clock time that the zone skips (the hour clocks spring forward) reads as NULL; one
    it repeats (falling back) as the earlier of the two instants.
    """
    # No cache: nearly every time in a dump is distinct, so caching them costs more than it saves.
    if timezone == "UTC":
        return raw.str.strptime(pl.Datetime("us", "UTC"), TIME_FORMAT, strict=False, cache=False)
    naive = raw.str.strptime(pl.Datetime("us"), TIME_FORMAT, strict=False, cache=False)
    local = naive.dt.replace_time_zone(timezone, ambiguous="earliest", non_existent="null")
    return local.dt.convert_time_zone("UTC")


def unreadable_time(raw: pl.Expr, parsed: pl.Expr) -> pl.Expr:
    """True where the text is a time sacct could have printed but it did not parse."""
    return raw.is_not_null() & ~raw.is_in(NO_TIME) & parsed.is_null()


def duration_s(raw: pl.Expr) -> pl.Expr:
    """`[D-]HH:MM:SS`, `MM:SS` or `MM:SS.mmm` in seconds.

    The usual `[D-]HH:MM:SS` is read by position; the regular expression runs only on the rest.
    """
    fast = raw.str.contains(_CLOCK)

    def digits(text: pl.Expr) -> pl.Expr:
        return text.str.to_integer(strict=False)

    clock = (
        digits(raw.str.head(-9)).fill_null(0) * 86400
        + digits(raw.str.slice(-8, 2)) * 3600
        + digits(raw.str.slice(-5, 2)) * 60
        + digits(raw.str.slice(-2, 2))
    )
    parts = pl.when(~fast).then(raw).str.extract_groups(DURATION)
    days = parts.struct.field("d").cast(pl.Float64).fill_null(0.0)
    hours = parts.struct.field("h").cast(pl.Float64).fill_null(0.0)
    minutes = parts.struct.field("m").cast(pl.Float64)
    seconds = parts.struct.field("s").cast(pl.Float64)
    other = days * 86400.0 + hours * 3600.0 + minutes * 60.0 + seconds
    return pl.when(fast).then(clock.cast(pl.Float64)).otherwise(other)


def time_limit_s(raw: pl.Expr) -> pl.Expr:
    """A time limit (`1-00:00:00`, `02:00:00`, `30:00`, or bare minutes `90`) in seconds;
    UNLIMITED and Partition_Limit are NULL."""
    minutes = raw.str.to_integer(strict=False).cast(pl.Float64) * 60.0
    limited = pl.when(~raw.is_in(NO_LIMIT))
    return limited.then(
        pl.when(raw.str.contains(r"^[0-9]+$")).then(minutes).otherwise(duration_s(raw))
    )


def unreadable_limit(raw: pl.Expr, parsed: pl.Expr) -> pl.Expr:
    """True where a time limit is not empty, not 'no limit', and did not parse."""
    return unreadable(raw, parsed) & ~raw.is_in(NO_LIMIT)


def job_and_step(raw: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The job and step parts of a JobID (step NULL for a job; both NULL if not a job id).

    Plain ids (`123`, `123_4`, `123.batch`) are split at the dot; the regular expression runs
    only on the rest (pending arrays, het components).
    """
    fast = raw.str.contains(_PLAIN_JOB_ID)
    split = raw.str.splitn(".", 2)
    parts = pl.when(~fast).then(raw).str.extract_groups(JOB_ID)
    job = pl.when(fast).then(split.struct.field("field_0")).otherwise(parts.struct.field("job"))
    step = pl.when(fast).then(split.struct.field("field_1")).otherwise(parts.struct.field("step"))
    return job, step


def state_and_reason(raw: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """`CANCELLED by 123` → (`CANCELLED`, `by 123`); '' → NULL.

    A bare base state, the usual text, passes as it is; the rest is trimmed, split, uppercased.
    """
    plain = raw.is_in(BASE_STATES)
    split = pl.when(~plain).then(raw).str.strip_chars().str.splitn(" ", 2)
    state = blank_to_null(split.struct.field("field_0").str.to_uppercase())
    reason = blank_to_null(split.struct.field("field_1").str.strip_chars())
    return pl.when(plain).then(raw).otherwise(state), pl.when(~plain).then(reason)


def size_bytes(raw: pl.Expr) -> pl.Expr:
    """`114944K`, `0.07M`, `2G` (binary units, as Slurm prints them) in bytes."""
    parts = raw.str.extract_groups(SIZE)
    unit = parts.struct.field("u").replace_strict(_UNITS, default=None, return_dtype=pl.Float64)
    return (parts.struct.field("n").cast(pl.Float64) * unit).round(0).cast(pl.Int64)


def integer(raw: pl.Expr) -> pl.Expr:
    """A whole number as Int32; anything else NULL."""
    return raw.str.to_integer(strict=False).cast(pl.Int32, strict=False)


def unreadable(raw: pl.Expr, parsed: pl.Expr) -> pl.Expr:
    """True where the text is not empty but did not parse."""
    return raw.is_not_null() & (raw != "") & parsed.is_null()


# One host, or one bracketed range of one prefix (`gpu0007`, `gpu[0007-0010]`): most NodeLists.
_ONE_HOST = r"^[^\[\],\s]+$"
_ONE_RANGE = r"^(?P<prefix>[^\[\],\s]*)\[(?P<low>[0-9]{1,9})-(?P<high>[0-9]{1,9})\]$"


def node_lists(keys: pl.Series) -> pl.DataFrame:
    """Host names of the NodeLists of one host or one range (`_key`, `node_list`), read in polars;
    the others (several items, several ranges, `None assigned`) are left to `hostlist.expand`.

    >>> node_lists(pl.Series(["gpu7", "n[08-10]", "a,b", "n[3-1]"])).rows()
    [('gpu7', ['gpu7']), ('n[08-10]', ['n08', 'n09', 'n10'])]
    """
    key = pl.col("_key")
    frame = keys.alias("_key").to_frame()
    one = frame.filter(key.str.contains(_ONE_HOST)).select("_key", node_list=pl.concat_list(key))
    parts = key.str.extract_groups(_ONE_RANGE)
    ranges = frame.select(
        "_key",
        parts.struct.field("prefix"),
        parts.struct.field("low").str.len_bytes().alias("width"),
        parts.struct.field("low").str.to_integer(strict=False).alias("low"),
        parts.struct.field("high").str.to_integer(strict=False).alias("high"),
    ).filter(pl.col("low") <= pl.col("high"))  # a reversed range is an error: left to Python
    hosts = (
        ranges.select("_key", "prefix", "width", n=pl.int_ranges("low", pl.col("high") + 1))
        .explode("n")
        .select("_key", pl.col("prefix") + pl.col("n").cast(pl.String).str.zfill(pl.col("width")))
        .group_by("_key", maintain_order=True)
        .agg(node_list="prefix")
    )
    return pl.concat([one, hosts])


def gpus_from_tres(text: str) -> tuple[int, str | None]:
    """GPU count and type in a TRES string (AllocTRES, ReqTRES).

    Slurm lists `gres/gpu=N`, and `gres/gpu:TYPE=N` per type when types are tracked, often
    both; the untyped count is the total. A TRES without a GPU entry means no GPUs.

    Raises:
        ValueError: when a GPU count is not a whole number.

    >>> gpus_from_tres("billing=64,cpu=64,gres/gpu:h100=8,mem=512G,node=1")
    (8, 'h100')
    >>> gpus_from_tres("cpu=8,gres/gpu=2,mem=64G")
    (2, None)
    >>> gpus_from_tres("cpu=16,gres/gpu=8,gres/gpu:a100=6,gres/gpu:v100=2")
    (8, 'a100,v100')
    >>> gpus_from_tres("cpu=4,mem=16G,node=1")
    (0, None)
    """
    total: int | None = None
    typed: dict[str, int] = {}
    for item in text.split(","):
        key, _, value = item.strip().partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        if not value.isdigit():
            raise ValueError(f"GPU count {value!r} in {item!r} is not a whole number")
        if key == "gres/gpu":
            total = int(value)
        else:
            name = key.removeprefix("gres/gpu:")
            typed[name] = typed.get(name, 0) + int(value)
    if total is None:
        total = sum(typed.values())
    return total, ",".join(sorted(typed)) or None


def gpus_from_gres(text: str) -> tuple[int, str | None]:
    """GPU count and type in a GRES string (AllocGRES, ReqGRES of older sacct).

    Raises:
        ValueError: when a GPU count is not a whole number.

    >>> gpus_from_gres("gpu:8")
    (8, None)
    >>> gpus_from_gres("gpu:tesla:2(IDX:0,1),mps:100")
    (2, 'tesla')
    >>> gpus_from_gres("")
    (0, None)
    """
    total = 0
    types: set[str] = set()
    for item in _GRES_INDEX.sub("", text).split(","):
        parts = item.strip().split(":")
        if parts[0] != "gpu":
            continue
        count = parts[-1] if len(parts) > 1 else "1"
        if not count.isdigit():
            raise ValueError(f"GPU count {count!r} in {item.strip()!r} is not a whole number")
        total += int(count)
        if len(parts) > 2:
            types.add(parts[1])
    return total, ",".join(sorted(types)) or None
