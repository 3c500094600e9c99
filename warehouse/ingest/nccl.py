"""The output of the nccl-tests binaries (all_reduce_perf and friends) → `nccl_results`.

    # nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 ...
    # Using devices
    #  Rank  0 Group  0 Pid  41231 on gpu-node-01 device  0 [0x18] NVIDIA H100 80GB HBM3
    ...
    #  size       count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
    #   (B)  (elements)                    (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
    8589934592 2147483648 float sum  -1  47535 180.71 338.83      0  47412 181.18 339.71      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 84.3033

Each result line gives two rows: out-of-place and in-place. Columns are found by the header's
names, so older releases (no `root`, an `error` magnitude instead of a `#wrong` count) read too;
an `error` magnitude is not a count of wrong values, so `wrong` is NULL there, as it is for
`N/A` (validation off, `-c 0`). A `root` of -1 and a `redop` of `none` mean there is none: NULL.
Lines of mpirun's `--tag-output` (`[1,0]<stdout>:`) and srun's `--label` (`0: `) are unwrapped.
The collective is `--collective`, else the file's name (all_reduce_perf.log), else a command line
in the output, else NULL. `run_id` is the source name; a file holding several runs numbers the
later ones `name#2`, `name#3`, ... The output carries no date, so `ran_at` stays NULL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import IO, Any

import pyarrow as pa

from warehouse.errors import UserError
from warehouse.ingest import blocks
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register
from warehouse.ingest.models import ModelNames

#: nccl-tests binary stem / NCCL spelling -> the collective name the model functions take.
COLLECTIVES = {
    "all_reduce": "all_reduce", "allreduce": "all_reduce",
    "all_gather": "all_gather", "allgather": "all_gather",
    "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all", "all_to_all": "all_to_all",
    "broadcast": "broadcast", "bcast": "broadcast",
    "reduce": "reduce", "sendrecv": "sendrecv", "scatter": "scatter", "gather": "gather",
    "hypercube": "hypercube",
}  # fmt: skip
_NAME = re.compile(
    r"(?<![a-z])(" + "|".join(sorted(COLLECTIVES, key=len, reverse=True)) + r")(?![a-z])"
)
_COMMAND = re.compile(
    r"(?<![A-Za-z])(" + "|".join(sorted(COLLECTIVES, key=len, reverse=True)) + r")_perf\b"
)
_WRAPPER = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+: )")
_RANK = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+"
    r"device\s+\d+\s+\[[^\]]*\]\s+(?P<device>.+?)\s*$"
)
_DEBUG = re.compile(r"\bNCCL (?:INFO|WARN|TRACE|DEBUG)\b")
#: Header names of the per-placement group, as each release spelled them.
_GROUP = {"time": "time_us", "algbw": "algbw_gbs", "busbw": "busbw_gbs", "#wrong": "wrong"}


@dataclass
class _Run:
    """One run of a test binary: what its banner said, and the column layout of its rows."""

    run_id: str
    collective: str | None
    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)  # rank -> (host, device)
    keys: list[str] = field(default_factory=list)  # size, count, type, redop[, root]
    group: list[str] = field(default_factory=list)  # time, algbw, busbw, #wrong | error
    placements: int = 0
    seen: bool = False  # a result line was read

    def context(self, names: ModelNames) -> dict[str, Any]:
        hosts = list(dict.fromkeys(host for host, _ in self.ranks.values()))
        devices = [device for _, device in self.ranks.values()]
        return {
            "run_id": self.run_id,
            "collective": self.collective,
            "ranks": len(self.ranks) or None,
            "hosts": hosts or None,
            "gpu_model": names.short(devices[0]) if devices else None,
        }


@register("nccl-tests", "nccl-tests output (all_reduce_perf and friends)")
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Result rows, a chunk per block of lines; see the module docstring."""
    given = _collective_option(options.collective)
    from_name = _collective_in(PurePath(source.name).name.lower(), _NAME)
    names = ModelNames(context.model_names)
    schema = pa.schema([f for f in context.schema("nccl_results") if f.name != "batch_id"])
    runs = 0
    run: _Run | None = None
    command: str | None = None  # the last test binary a command line named
    for lines in blocks.line_frames(stream):
        rows: list[dict[str, Any]] = []
        rejects: list[Reject] = []
        for number, raw in lines.iter_rows():
            text = _WRAPPER.sub("", raw, count=1).strip()
            if not text or _DEBUG.search(text):
                continue
            named = _collective_in(text, _COMMAND)
            if named:
                command = named
                if run is not None and run.collective is None and not run.seen:
                    run.collective = named
            if text.startswith("#"):
                if run is None or (text.startswith("# nThread") and run.keys):
                    runs += 1
                    run_id = source.name if runs == 1 else f"{source.name}#{runs}"
                    run = _Run(run_id, given or from_name or command)
                _banner(run, text, source)
            elif run is not None and run.keys:
                parsed = _result(run, text)
                if isinstance(parsed, str):
                    rejects.append(Reject(number, parsed, raw))
                else:
                    run.seen = True
                    rows.extend({**run.context(names), **row} for row in parsed)
            # Anything else before the column header: launcher output, warnings.
        if rows or rejects:
            table = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
            yield Parsed("nccl_results", table, rejects)
    if run is None or not run.keys:
        raise UserError(
            f"{source.name}: no nccl-tests results found (expected the column header line "
            "'#  size  count  type  redop  root  time  algbw  busbw  #wrong ...')"
        )


def _collective_option(given: str | None) -> str | None:
    if given is None:
        return None
    try:
        return COLLECTIVES[given.strip().lower().removesuffix("_perf")]
    except KeyError:
        known = ", ".join(sorted(set(COLLECTIVES.values())))
        raise UserError(f"nccl-tests: unknown collective {given!r}; one of: {known}") from None


def _collective_in(text: str, pattern: re.Pattern[str]) -> str | None:
    """The collective a file name or command line names, if any.

    >>> _collective_in("all_reduce_perf.log", _NAME), _collective_in("run-alltoall.txt", _NAME)
    ('all_reduce', 'all_to_all')
    >>> _collective_in("mpirun -np 16 ./build/reduce_scatter_perf -b 8 -e 8G", _COMMAND)
    'reduce_scatter'
    """
    match = pattern.search(text)
    return COLLECTIVES[match.group(1).lower()] if match else None


def _banner(run: _Run, text: str, source: Source) -> None:
    """Take what a comment line says: a rank's host and device, or the column header."""
    rank = _RANK.match(text)
    if rank:
        run.ranks[int(rank["rank"])] = (rank["host"], rank["device"])
        return
    names = text.lstrip("#").split()
    if names[:2] != ["size", "count"] or "time" not in names:
        return
    first = names.index("time")
    keys, groups = names[:first], names[first:]
    width = groups.index("time", 1) if "time" in groups[1:] else len(groups)
    group = groups[:width]
    if len(groups) % width or any(n not in _GROUP and n != "error" for n in group):
        raise UserError(f"{source.name}: unknown nccl-tests column header {text!r}")
    run.keys, run.group, run.placements = keys, group, len(groups) // width


def _result(run: _Run, text: str) -> list[dict[str, Any]] | str:
    """The rows of one result line, or why it cannot be read."""
    values = text.split()
    if not values[0].isdigit():
        return "not an nccl-tests result line"
    expected = len(run.keys) + len(run.group) * run.placements
    if len(values) != expected:
        return f"expected {expected} columns as the header names, found {len(values)}"
    keyed = dict(zip(run.keys, values, strict=False))
    try:
        base = {
            "size_bytes": int(keyed["size"]),
            "count": int(keyed["count"]),
            "dtype": keyed.get("type"),
            "redop": None if keyed.get("redop") in (None, "none") else keyed["redop"],
            "root": _root(keyed.get("root")),
        }
    except ValueError:
        return "size, count and root must be whole numbers: " + " ".join(values[: len(run.keys)])
    rows = []
    offset = len(run.keys)
    for placement in range(run.placements):
        row: dict[str, Any] = {**base, "placement": ("out-of-place", "in-place")[min(placement, 1)]}
        for name, value in zip(run.group, values[offset : offset + len(run.group)], strict=True):
            column = _GROUP.get(name)
            if column is None:  # `error`: a magnitude, not a count
                continue
            try:
                row[column] = (
                    None if value == "N/A" else int(value) if column == "wrong" else float(value)
                )
            except ValueError:
                return f"{name}: not a number: {value!r}"
        offset += len(run.group)
        rows.append(row)
    return rows


def _root(text: str | None) -> int | None:
    if text is None:
        return None
    root = int(text)
    return None if root < 0 else root
