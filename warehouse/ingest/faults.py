"""Fault and repair logs → `node_faults`: `wanka ingest faults FILE`.

One format name for every shape a fault log comes in, told apart by its first bytes:

- a JSON array of events (`[{...`): a fault trace such as StepFun's InfiniteHBD trace — events
  `fault_start`/`fault_end` with `node_id`, `event_time` (days from the trace's start, which is
  2024-03-30 unless `--trace-start` says otherwise) and `fault_type` {Level, Class, Desc}; an end
  closes the oldest open fault of the same node and type (`faults_events`);
- ndjson (`{...` per line) or CSV with a header: node, start, end, kind, description (and
  optionally level), one fault per line — an operator's ticket or RMA export (`faults_events`);
- `sinfo -R` output (a header REASON USER TIMESTAMP [STATE] NODELIST) and `scontrol show node`
  output (NodeName=... with Reason=text [user@time]): Slurm's record of drained and down nodes,
  each an open fault from the time Slurm gives (`faults_slurm`).

What every shape shares is here: a fault whose end is before its start is rejected with its line
and the field; faults of one node and class that overlap (in one file) are merged into one, and
the merge is said in `wanka.ingest_rejects` (field 'merged') with the line it was merged into; a
time that cannot be placed stops the ingest with an error naming the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from warehouse.errors import UserError
from warehouse.ingest import faults_events, faults_slurm
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register
from warehouse.ingest.fault_records import check_and_merge, to_arrow

TABLE = "node_faults"
#: A fault log larger than this is not one (a node fault per line: millions of faults).
MAX_BYTES = 512 << 20


@register("faults", "a fault log (trace JSON, CSV/ndjson, sinfo -R or scontrol show node)")
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """The faults of one log, checked and merged; see the module docstring."""
    data = stream.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise UserError(f"{source.name}: larger than {MAX_BYTES >> 20} MiB: not a fault log")
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    head = text.lstrip()[:4096]
    if head.startswith("["):
        found, rejects = faults_events.read_trace(text, source, options)
    elif head.startswith("{"):
        found, rejects = faults_events.read_ndjson(text, source, options)
    elif head.startswith("NodeName="):
        found, rejects = faults_slurm.read_scontrol(text, source, options)
    elif head.split(None, 1)[:1] == ["REASON"]:
        found, rejects = faults_slurm.read_sinfo(text, source, options)
    else:
        found, rejects = faults_events.read_csv(text, source, options)
    kept, said = check_and_merge(found)
    yield Parsed(TABLE, to_arrow(kept, context.schema(TABLE)), sorted(rejects + said, key=_line))


def _line(reject: Reject) -> int:
    return reject.line or 0
