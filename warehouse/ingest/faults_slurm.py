"""Slurm's record of drained and down nodes as open faults: `sinfo -R` and `scontrol show node`.

`sinfo -R` prints (format `%20E %9u %19H %N`; with `--long` `%20E %12U %19H %6t %N`):

    REASON               USER      TIMESTAMP           NODELIST
    Kill task failed     root      2024-05-01T10:00:00 gpu[001-003]

`scontrol show node` prints one record per node, a `NodeName=` line then indented lines (or all
on one line with `--oneliner`), with `State=IDLE+DRAIN` and `Reason=text [user@time]`.

A node in a drain, down or fail state with a reason becomes one open fault per node from the
reason's time: level 'drain' | 'down' | 'fail', class 'slurm', the reason as description, source
'sinfo:USER' / 'scontrol:USER'. Times are wall-clock times in `--tz`. A time Slurm could not
give ('Unknown') or a line that does not read is rejected with its field.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime

from warehouse.ingest.base import ReadOptions, Reject, Source
from warehouse.ingest.fault_records import Fault
from warehouse.jobs import hostlist

_SLURM_TIME = "%Y-%m-%dT%H:%M:%S"
_SINFO = re.compile(r"^(?P<reason>.*?)\s+(?P<user>\S+)\s+(?P<time>\S+)\s+(?P<nodes>\S+)\s*$")
_SINFO_LONG = re.compile(
    r"^(?P<reason>.*?)\s+(?P<user>\S+)\s+(?P<time>\S+)\s+(?P<state>\S+)\s+(?P<nodes>\S+)\s*$"
)
_REASON = re.compile(r"\bReason=(?P<text>.*?)\s*\[(?P<user>[^@\]\s]+)@(?P<time>[^\]\s]+)\]")
_FIELD = re.compile(r"(?:^|\s)(?P<key>NodeName|State)=(?P<value>\S+)")


def read_sinfo(text: str, source: Source, options: ReadOptions) -> tuple[list[Fault], list[Reject]]:
    """`sinfo -R [--long]` output: one line per reason and host list."""
    faults: list[Fault] = []
    rejects: list[Reject] = []
    lines = text.splitlines()
    header = lines[0].split()
    has_state = "STATE" in header
    pattern = _SINFO_LONG if has_state else _SINFO
    for number, raw in enumerate(lines[1:], 2):
        if not raw.strip():
            continue
        found = pattern.match(raw.rstrip())
        if not found:
            rejects.append(Reject(number, "expected REASON USER TIMESTAMP [STATE] NODELIST", raw))
            continue
        try:
            at = _slurm_time(found["time"], options.timezone)
            nodes = hostlist.expand(found["nodes"])
        except ValueError as error:
            field = "TIMESTAMP" if "time" in str(error) else "NODELIST"
            rejects.append(Reject(number, f"{field}: {error}", raw, field))
            continue
        level = (_level(found["state"]) if has_state else None) or "drain"
        source_name = f"sinfo:{found['user']}"
        for node in nodes:
            reason = found["reason"].strip() or None
            faults.append(Fault(number, node, at, None, level, "slurm", reason, source_name, raw))
    return faults, rejects


def read_scontrol(
    text: str, source: Source, options: ReadOptions
) -> tuple[list[Fault], list[Reject]]:
    """`scontrol show node [--oneliner]` output: the nodes drained, down or failed, with why."""
    faults: list[Fault] = []
    rejects: list[Reject] = []
    for number, record in _records(text):
        fields = {m["key"]: m["value"] for m in _FIELD.finditer(record)}
        node, state = fields.get("NodeName"), fields.get("State", "")
        level = _level(state)
        if node is None or level is None:
            continue  # a node in service: no fault
        reason = _REASON.search(record)
        if reason is None:
            rejects.append(
                Reject(number, f"Reason: {state} node {node} without 'Reason=text [user@time]'",
                       record, "Reason")
            )  # fmt: skip
            continue
        try:
            at = _slurm_time(reason["time"], options.timezone)
        except ValueError as error:
            rejects.append(Reject(number, f"Reason: {error}", record, "Reason"))
            continue
        faults.append(
            Fault(number, node, at, None, level, "slurm", reason["text"].strip() or None,
                  f"scontrol:{reason['user']}", record)
        )  # fmt: skip
    return faults, rejects


def _records(text: str) -> list[tuple[int, str]]:
    """Each node's text (its lines joined) with the number of its NodeName= line."""
    found: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("NodeName="):
            found.append((number, [line]))
        elif found and line.strip():
            found[-1][1].append(line.strip())
    return [(number, " ".join(lines)) for number, lines in found]


def _level(state: str) -> str | None:
    """'down', 'fail' or 'drain' for a Slurm node state with its flags, else None.

    >>> _level("IDLE+DRAIN"), _level("DOWN*+NOT_RESPONDING"), _level("MIXED"), _level("drng")
    ('drain', 'down', None, 'drain')
    """
    flags = {f.rstrip("*~#!%$@^-").upper() for f in state.split("+")}
    if flags & {"DOWN", "DOWN*"}:
        return "down"
    if flags & {"FAIL", "FAILING", "FAILG"}:
        return "fail"
    if flags & {"DRAIN", "DRAINED", "DRAINING", "DRAIN*", "DRNG", "DRAIN$"}:
        return "drain"
    return None


def _slurm_time(text: str, timezone: str) -> datetime:
    """`2024-05-01T10:00:00` in `timezone`, as UTC."""
    try:
        naive = datetime.strptime(text, _SLURM_TIME)
    except ValueError:
        raise ValueError(f"time {text!r} does not read as YYYY-MM-DDTHH:MM:SS") from None
    return naive.replace(tzinfo=zoneinfo.ZoneInfo(timezone)).astimezone(UTC)
