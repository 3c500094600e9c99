"""Kernel log lines → `kernel_messages`: dmesg -T, journalctl -k (short, short-iso) and syslog.

    [Wed Dec 11 13:23:01 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off ...
    Dec 11 13:23:01 gpu-node-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, ...
    2024-12-11T13:23:01+0000 gpu-node-07 kernel: mlx5_core 0000:17:00.0: Port module event ...
    [ 8812.402114] NVRM: GPU at PCI:0000:3b:00: GPU-1b2c...

An NVRM Xid line's code and PCI address are parsed out (`xid`, `pci`), so that its cause is a
join with `interruption_xids`, never a model's guess; every line keeps its whole text in
`message` for the AI functions (docs/ai.md). A syslog line without a year takes the year of
`--at`, else of the file's modification time; dmesg's seconds since boot leave `ts` NULL.
Lines that are not a kernel log line are rejected with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

import pyarrow as pa

from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register

TABLE = "kernel_messages"
CHUNK = 50_000
_DMESG_T = re.compile(r"^\[(?P<when>\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\] (?P<msg>.*)$")
_DMESG = re.compile(r"^\[\s*(?P<uptime>\d+\.\d+)\] (?P<msg>.*)$")
_SYSLOG = re.compile(
    r"^(?P<when>\w{3} [ \d]\d \d\d:\d\d:\d\d) (?P<host>\S+) "
    r"kernel: (?:\[\s*\d+\.\d+\] )?(?P<msg>.*)$"
)
_ISO = re.compile(
    r"^(?P<when>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) (?P<host>\S+) "
    r"kernel: (?:\[\s*\d+\.\d+\] )?(?P<msg>.*)$"
)
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+)\b")


def parse_line(line: str, year: int, host: str | None) -> dict[str, Any] | None:
    """One kernel log line as a row (without `source`), or None when it is not one.

    >>> line = "Dec 11 13:23:01 n7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1"
    >>> row = parse_line(line, 2024, None)
    >>> row["ts"].isoformat(), row["host"], row["xid"], row["pci"]
    ('2024-12-11T13:23:01+00:00', 'n7', 79, '0000:3b:00')
    """
    ts: datetime | None = None
    if found := _DMESG_T.match(line):
        ts = datetime.strptime(found["when"], "%a %b %d %H:%M:%S %Y").replace(tzinfo=UTC)
    elif found := _SYSLOG.match(line):
        when = datetime.strptime(f"{year} {found['when']}", "%Y %b %d %H:%M:%S")
        ts, host = when.replace(tzinfo=UTC), found["host"]
    elif found := _ISO.match(line):
        ts = datetime.fromisoformat(found["when"].replace("Z", "+00:00"))
        ts = ts if ts.tzinfo else ts.replace(tzinfo=UTC)
        host = found["host"]
    elif not (found := _DMESG.match(line)):
        return None
    message = found["msg"].strip()
    xid = _XID.search(message)
    return {
        "ts": ts,
        "host": host,
        "message": message,
        "xid": int(xid["xid"]) if xid else None,
        "pci": xid["pci"].lower() if xid else None,
    }


@register("kernel-log", "kernel log lines (dmesg -T, journalctl -k, syslog)")
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    schema = context.schema(TABLE)
    year = (options.at or source.mtime or datetime.now(UTC)).year
    rows: list[dict[str, Any]] = []
    rejects: list[Reject] = []
    for number, raw in enumerate(stream, start=1):
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line.strip():
            continue
        row = parse_line(line, year, options.host)
        if row is None:
            rejects.append(
                Reject(number, "not a kernel log line (dmesg, journalctl -k, syslog)", line)
            )
            continue
        row["source"] = source.name
        rows.append(row)
        if len(rows) >= CHUNK:
            yield _chunk(rows, rejects, schema)
            rows, rejects = [], []
    if rows or rejects:
        yield _chunk(rows, rejects, schema)


def _chunk(rows: list[dict[str, Any]], rejects: list[Reject], schema: pa.Schema) -> Parsed:
    wanted = pa.schema(
        [schema.field(name) for name in ("ts", "host", "message", "xid", "pci", "source")]
    )
    return Parsed(TABLE, pa.Table.from_pylist(rows, schema=wanted), rejects)
