"""A fault as every fault-log reader hands it over, and the checks they all share: an end before
its start is rejected with its line and field; faults of one node and class that overlap are
merged into one, and the merge said in `wanka.ingest_rejects` (field 'merged')."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import pyarrow as pa

from warehouse.ingest.base import Reject


@dataclass(frozen=True)
class Fault:
    """One fault as a reader found it, before the shared checks."""

    line: int
    node: str
    start_at: datetime
    end_at: datetime | None
    level: str | None
    kind: str | None  # node_faults.class
    description: str | None
    source: str
    raw: str


def check_and_merge(faults: list[Fault]) -> tuple[list[Fault], list[Reject]]:
    """Faults whose end is not before their start, overlapping ones of a node and class merged.

    >>> from datetime import UTC
    >>> t = lambda h: datetime(2024, 1, 1, h, tzinfo=UTC)
    >>> a = Fault(1, "n1", t(1), t(3), None, "GPU", "x", "csv", "a")
    >>> b = Fault(2, "n1", t(2), t(5), None, "GPU", "y", "csv", "b")
    >>> c = Fault(3, "n1", t(4), t(2), None, "NIC", "z", "csv", "c")
    >>> kept, said = check_and_merge([a, b, c])
    >>> [(f.line, f.start_at.hour, f.end_at.hour) for f in kept]
    [(1, 1, 5)]
    >>> [(r.line, r.field) for r in said]
    [(3, 'end'), (2, 'merged')]
    """
    said: list[Reject] = []
    good: list[Fault] = []
    for fault in faults:
        if fault.end_at is not None and fault.end_at < fault.start_at:
            said.append(
                Reject(
                    fault.line,
                    f"end: {fault.end_at.isoformat()} is before start {fault.start_at.isoformat()}",
                    fault.raw,
                    "end",
                )
            )
        else:
            good.append(fault)
    good.sort(key=lambda f: (f.node, f.kind or "", f.start_at, f.line))
    kept: list[Fault] = []
    for fault in good:
        last = kept[-1] if kept else None
        if (
            last is not None
            and (last.node, last.kind) == (fault.node, fault.kind)
            and (last.end_at is None or fault.start_at <= last.end_at)
        ):
            end = (
                None
                if last.end_at is None or fault.end_at is None
                else max(last.end_at, fault.end_at)
            )
            kept[-1] = replace(last, end_at=end)
            said.append(
                Reject(
                    fault.line,
                    f"merged: overlaps the {fault.kind or 'unclassed'} fault of {fault.node} "
                    f"from line {last.line}, stored as one fault",
                    fault.raw,
                    "merged",
                )
            )
        else:
            kept.append(fault)
    kept.sort(key=lambda f: f.line)
    return kept, said


def to_arrow(faults: list[Fault], schema: pa.Schema) -> pa.Table:
    """The faults as rows of `node_faults` (batch_id is added by the batch)."""
    columns = {
        "node": [f.node for f in faults],
        "start_at": [f.start_at for f in faults],
        "end_at": [f.end_at for f in faults],
        "level": [f.level for f in faults],
        "class": [f.kind for f in faults],
        "description": [f.description for f in faults],
        "source": [f.source for f in faults],
    }
    fields = [schema.field(name) for name in columns]
    return pa.table(
        [pa.array(values, f.type) for values, f in zip(columns.values(), fields, strict=True)],
        schema=pa.schema(fields),
    )
