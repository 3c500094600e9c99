"""Slurm's view of its jobs now, as `scontrol show job -d --oneliner` prints it → `jobs` and
`job_gpus` (which GPU indices Slurm gave each job on each node; stored in `gpu_attribution`).

    JobId=124 ArrayJobId=123 ArrayTaskId=4 JobName=train UserId=alice(1001) ... Account=ml
    QOS=normal JobState=RUNNING Reason=None ... RunTime=01:02:03 TimeLimit=1-00:00:00 ...
    SubmitTime=2026-11-01T00:00:00 ... StartTime=... EndTime=... Partition=gpu ...
    NodeList=gpu[001-002] ... NumNodes=2 NumCPUs=64 ... AllocTRES=cpu=64,...,gres/gpu=16 ...
      Nodes=gpu[001-002] CPU_IDs=0-31 Mem=256000 GRES=gpu:h100:8(IDX:0-7) ... OverSubscribe=NO

One job per line; without `--oneliner` a job's fields run over indented lines, which are read the
same way. Each detail group (`-d`: Nodes, CPU_IDs, Mem, GRES) gives one GPU row per host
and GPU index, source 'scontrol'. Slurm's IDX counts the node's GPUs in gres.conf order, which is
the nvidia-smi index wherever gres.conf lists /dev/nvidia0.. in order (AutoDetect=nvml does); MIG
slices, GRES counts without indices and shared GRES (shard, mps) give no rows. A job holds its
GPUs from StartTime; EndTime ends them only once the job has ended, since while it runs EndTime is
when its time limit will run out. For the same reason a pending job's StartTime (an estimate)
is not stored. Times are wall-clock times in `--timezone`, read as the sacct reader reads them.

A line without JobId, or with a value that does not read (a time, a duration, a host list, a
GRES), is rejected whole, with its number and the field at fault; the rest of the file loads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import polars as pl

from warehouse.ingest import blocks, textblocks
from warehouse.ingest import scontrol_fields as sf
from warehouse.ingest import slurm_values as sv
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register
from warehouse.jobs import hostlist

#: Where the GPU rows go: the interval sources' store behind the `job_gpus` view
#: (sql/schema/0014_job_gpus.sql); the ingest replaces a job's earlier scontrol rows there.
GPU_TABLE = "gpu_attribution"
#: Jobs read before a chunk is handed on: memory stays bounded whatever the capture's size.
CHUNK_JOBS = 20_000
#: (field, column) of the times, durations and the other text read as sacct's.
_TIMES = (
    ("SubmitTime", "submit_at"),
    ("EligibleTime", "eligible_at"),
    ("StartTime", "start_at"),
    ("EndTime", "end_at"),
)
_TEXT = (
    ("JobName", "job_name"), ("Account", "account"), ("Partition", "partition"), ("QOS", "qos"),
    ("ExitCode", "exit_code"), ("DerivedExitCode", "derived_exit_code"),
)  # fmt: skip
#: States in which a job has not ended: its EndTime is a forecast. Pending ones (held, requeued)
#: have not started either: their StartTime is a forecast too.
_PENDING = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT")
_RUNNING = ("RUNNING", "SUSPENDED", "CONFIGURING", "RESIZING", "SIGNALING", "STOPPED",
            "POWER_UP_NODE", "UPDATE_DB")  # fmt: skip
_EMPTY = "No jobs in the system"


@register("scontrol", "Slurm scontrol show job -d --oneliner output")
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Jobs and their GPUs, a chunk of each per CHUNK_JOBS jobs; see the module docstring."""
    tz = sv.zone(options.timezone, "scontrol")
    records: list[dict[str, Any]] = []
    gpus: list[tuple[int, str, int]] = []  # (record, host, gpu index)
    rejects: list[Reject] = []
    for line, text in _records(stream):
        found = _record(line, text, len(records), options)
        if isinstance(found, Reject):
            rejects.append(found)
            continue
        records.append(found[0])
        gpus.extend(found[1])
        if len(records) >= CHUNK_JOBS:
            yield from _chunk(records, gpus, rejects, tz, context)
            records, gpus, rejects = [], [], []
    if records or rejects:
        yield from _chunk(records, gpus, rejects, tz, context)


def _records(stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """(first line, text) per job: a line that starts with JobId, and the indented lines after
    it; any other line stands alone (and is rejected for want of a JobId)."""
    start, parts = 0, list[str]()
    for number, text in textblocks.lines(stream):
        if not text.strip() or text.strip() == _EMPTY:
            continue
        if parts and text[:1].isspace():
            parts.append(text)
            continue
        if parts:
            yield start, "\n".join(parts)
        start, parts = number, [text]
    if parts:
        yield start, "\n".join(parts)


def _record(
    line: int, text: str, row: int, options: ReadOptions
) -> tuple[dict[str, Any], list[tuple[int, str, int]]] | Reject:
    """One job's raw columns and GPU rows, or the reject that says why it does not read."""
    job = sf.parse_fields(text)
    job_id = sf.job_id(job)
    if job_id is None:
        found = job.fields.get("JobId")
        why = "no JobId= field" if found is None else f"JobId {found!r} is not a job number"
        return Reject(
            line, f"{why}: expected scontrol show job -d --oneliner output", text, "JobId"
        )
    record: dict[str, Any] = {"line": line, "text": text, "job_id": job_id}
    record.update({column: job.text(key) for key, column in _TEXT})
    record.update({f"raw_{key}": job.text(key) for key, _ in _TIMES})
    record.update(
        raw_state=job.text("JobState"),
        state_reason=job.text("Reason"),
        user=sf.user_name(job.text("UserId")),
        cluster=options.cluster,
        raw_RunTime=job.text("RunTime"),
        raw_TimeLimit=job.text("TimeLimit"),
        exclusive=sf.exclusive(job.text("OverSubscribe"), job.text("Exclusive")),
    )
    key = "NodeList"
    try:
        record["node_list"] = hostlist.expand(job.text(key) or "") or None
        key = "NumNodes"
        record["nodes"] = sf.leading_count(job.text(key))
        key = "NumCPUs"
        record["cpus"] = sf.leading_count(job.text(key))
        key, tres = _tres(job)
        record["gpus"], record["gpu_type"] = sv.gpus_from_tres(tres) if tres else (None, None)
        if (record["gpus"] or 0) > sf.MAX_COUNT:
            raise ValueError(f"{record['gpus']} GPUs is more than a job can hold")
        gpus: list[tuple[int, str, int]] = []
        for group in job.groups:
            key = "Nodes"
            hosts = hostlist.expand(group.get(key, ""))
            key = "GRES" if "GRES" in group else "GRES_IDX"
            gpus.extend((row, h, i) for h in hosts for i in sf.gpu_indices(group.get(key)))
    except ValueError as error:
        return Reject(line, f"{key}: {error}", text, key)
    return record, gpus


def _tres(job: sf.Job) -> tuple[str, str | None]:
    """The field that says what the job holds: AllocTRES (TRES before 23.02), else ReqTRES."""
    for key in ("AllocTRES", "TRES", "ReqTRES"):
        if job.text(key):
            return key, job.text(key)
    return "AllocTRES", None


def _chunk(
    records: list[dict[str, Any]],
    gpus: list[tuple[int, str, int]],
    rejects: list[Reject],
    tz: str,
    context: ReadContext,
) -> Iterator[Parsed]:
    """Typed `jobs` and `job_gpus` rows of some records; the records that do not type rejected."""
    frame = pl.DataFrame(records, schema=_schema())
    typed = _typed(frame.with_row_index("row"), tz)
    bad, rejects = _bad(typed, rejects)
    typed = typed.filter(~bad)
    # The same job twice in one capture: the later line is the newer.
    typed = typed.filter(pl.col("job_id").is_last_distinct())
    yield Parsed("jobs", blocks.arrow_rows(typed, context.schema("jobs")), rejects)
    if gpus:
        held = pl.DataFrame(gpus, schema={"row": pl.UInt32, "host": pl.String, "gpu": pl.Int32},
                            orient="row")  # fmt: skip
        rows = held.join(typed.select("row", "job_id", "start_at", "gpu_end_at"), on="row")
        rows = rows.select(
            "job_id", "host", "gpu", "start_at", end_at="gpu_end_at",
            source=pl.lit("scontrol"), exact=pl.lit(True),
        )  # fmt: skip
        if rows.height:
            yield Parsed(GPU_TABLE, blocks.arrow_rows(rows, context.schema(GPU_TABLE)))


def _schema() -> dict[str, Any]:
    text = ["text", "job_id", *(c for _, c in _TEXT), *(f"raw_{k}" for k, _ in _TIMES)]
    text += ["raw_state", "state_reason", "user", "cluster", "raw_RunTime", "raw_TimeLimit"]
    text += ["gpu_type"]
    return {
        "line": pl.Int64,
        **dict.fromkeys(text, pl.String),
        "exclusive": pl.Boolean,
        "node_list": pl.List(pl.String),
        **dict.fromkeys(("nodes", "cpus", "gpus"), pl.Int32),
    }


def _typed(frame: pl.DataFrame, tz: str) -> pl.DataFrame:
    """Times, durations and the state, read with the sacct reader's expressions."""
    state, _ = sv.state_and_reason(pl.col("raw_state"))
    frame = frame.with_columns(
        state=state,
        elapsed_s=sv.duration_s(pl.col("raw_RunTime")),
        time_limit_s=sv.time_limit_s(pl.col("raw_TimeLimit")),
        **{f"read_{key}": sv.timestamp(pl.col(f"raw_{key}"), tz) for key, _ in _TIMES},
    )
    pending, running = pl.col("state").is_in(_PENDING), pl.col("state").is_in(_RUNNING)
    return frame.with_columns(
        submit_at="read_SubmitTime",
        eligible_at="read_EligibleTime",
        start_at=pl.when(~pending).then("read_StartTime"),
        end_at=pl.when(~pending & ~running).then("read_EndTime"),
        gpu_end_at=pl.when(~pending & ~running).then("read_EndTime"),
    )


def _bad(typed: pl.DataFrame, rejects: list[Reject]) -> tuple[pl.Series, list[Reject]]:
    """Which rows have a value that did not read, and the rejects, in line order, with theirs."""
    checks: list[tuple[str, pl.Expr, str]] = [
        ("JobState", pl.col("state").is_null() | ~pl.col("state").is_in(sv.BASE_STATES),
         "not a Slurm job state"),
        *((key, sv.unreadable_time(pl.col(f"raw_{key}"), pl.col(f"read_{key}")),
           "not a time like 2026-11-01T10:00:00") for key, _ in _TIMES),
        ("RunTime", sv.unreadable(pl.col("raw_RunTime"), pl.col("elapsed_s"))
         & (pl.col("raw_RunTime") != "INVALID"), "not a duration [D-]HH:MM:SS"),
        ("TimeLimit", sv.unreadable_limit(pl.col("raw_TimeLimit"), pl.col("time_limit_s")),
         "not a time limit like 1-00:00:00 or UNLIMITED"),
    ]  # fmt: skip
    flags = typed.select(
        *(flag.fill_null(False).alias(f"bad_{i}") for i, (_, flag, _) in enumerate(checks))
    )
    bad = flags.select(pl.any_horizontal(pl.lit(False), pl.all())).to_series()
    if not bad.any():
        return bad, rejects
    raw = {"JobState": "raw_state", **{k: f"raw_{k}" for k in ("RunTime", "TimeLimit")}}
    rows = pl.concat([typed, flags], how="horizontal").filter(bad)
    for row in rows.iter_rows(named=True):
        i = next(i for i in range(len(checks)) if row[f"bad_{i}"])
        key, _, what = checks[i]
        value = row[raw.get(key, f"raw_{key}")]
        rejects.append(Reject(row["line"], f"{key}: {what}: {value!r}", row["text"], key))
    return bad, sorted(rejects, key=lambda r: r.line or 0)
