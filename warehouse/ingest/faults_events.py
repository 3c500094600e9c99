"""Fault traces (a JSON array of start/end events) and plain fault lists (CSV, ndjson).

Times: an ISO 8601 text (a time without a zone is in `--tz`), epoch seconds (a number from
1e8 on), or — in traces and in lists that count that way — days from the trace's start: the
InfiniteHBD trace counts days from 2024-03-30 (its README), any other list needs
`--trace-start`, and without it the ingest stops naming the field.
"""

from __future__ import annotations

import csv
import io
import json
import zoneinfo
from collections import defaultdict, deque
from datetime import UTC, datetime, timedelta
from typing import Any

from warehouse.errors import UserError
from warehouse.ingest.base import ReadOptions, Reject, Source
from warehouse.ingest.fault_records import Fault

#: Where InfiniteHBD's `event_time` (days) counts from: the trace's README.
INFINITEHBD_START = datetime(2024, 3, 30, tzinfo=UTC)
#: Numbers from here on are epoch seconds (1973-03-03); below, days from the trace's start.
EPOCH_FROM = 1e8
_COLUMNS = {"start_at": "start", "end_at": "end", "class": "kind", "host": "node"}


class Unplaced(ValueError):
    """A time that does not read as one."""


def read_trace(text: str, source: Source, options: ReadOptions) -> tuple[list[Fault], list[Reject]]:
    """A JSON array of fault_start / fault_end events; each end closes the oldest open fault of
    its node and type. Faults with no end stay open."""
    origin = options.trace_start or INFINITEHBD_START
    opened: dict[tuple[str, str, str, str], deque[Fault]] = defaultdict(deque)
    done: list[Fault] = []
    rejects: list[Reject] = []
    for line, raw, event in _json_array(text, source):
        if not isinstance(event, dict):
            rejects.append(Reject(line, "expected an object for each event", raw))
            continue
        node = event.get("node_id") or event.get("node")
        kind = event.get("event_type")
        given = event.get("fault_type")
        typed: dict[str, Any] = given if isinstance(given, dict) else {}
        if not isinstance(node, str) or not node:
            rejects.append(Reject(line, "node_id: missing", raw, "node_id"))
            continue
        if kind not in ("fault_start", "fault_end"):
            reason = f"event_type: expected fault_start or fault_end, got {kind!r}"
            rejects.append(Reject(line, reason, raw, "event_type"))
            continue
        try:
            at = _days_or_time(event.get("event_time"), origin, "event_time", options, source)
        except Unplaced as error:
            rejects.append(Reject(line, str(error), raw, "event_time"))
            continue
        level, cls, desc = (_text(typed.get(k)) for k in ("Level", "Class", "Desc"))
        key = (node, level or "", cls or "", desc or "")
        if kind == "fault_start":
            opened[key].append(Fault(line, node, at, None, level, cls, desc, "trace", raw))
        elif opened[key]:
            start = opened[key].popleft()
            done.append(Fault(start.line, node, start.start_at, at, level, cls, desc, "trace",
                              start.raw))  # fmt: skip
        else:
            reason = "event_time: a fault_end with no fault_start of this node and type before it"
            rejects.append(Reject(line, reason, raw, "event_time"))
    done.extend(f for queue in opened.values() for f in queue)
    done.sort(key=lambda f: f.line)
    return done, rejects


def read_ndjson(
    text: str, source: Source, options: ReadOptions
) -> tuple[list[Fault], list[Reject]]:
    """One JSON object per line: node, start, end, kind, description (level optional)."""
    rows: list[tuple[int, str, dict[str, Any] | None]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            rows.append((number, line, None))
            continue
        rows.append((number, line, value if isinstance(value, dict) else None))
    return _listed(rows, source, options, "ndjson")


def read_csv(text: str, source: Source, options: ReadOptions) -> tuple[list[Fault], list[Reject]]:
    """A CSV with a header naming node, start, end, kind, description (level optional)."""
    lines = io.StringIO(text)
    reader = csv.reader(lines)
    header: list[str] | None = None
    rows: list[tuple[int, str, dict[str, Any] | None]] = []
    raw_lines = text.splitlines()
    for fields in reader:
        number = reader.line_num
        if not any(f.strip() for f in fields):
            continue
        if header is None:
            header = [_COLUMNS.get(f.strip().lower(), f.strip().lower()) for f in fields]
            missing = [c for c in ("node", "start") if c not in header]
            if missing:
                raise UserError(
                    f"{source.name}: expected a fault log (trace JSON, ndjson, CSV with a header "
                    f"naming node,start,end,kind,description, sinfo -R or scontrol show node); "
                    f"the first line names no {' or '.join(missing)}: {raw_lines[0][:120]!r}"
                )
            continue
        raw = raw_lines[number - 1] if number - 1 < len(raw_lines) else ",".join(fields)
        if len(fields) != len(header):
            rows.append((number, raw, None))
            continue
        rows.append((number, raw, dict(zip(header, fields, strict=True))))
    return _listed(rows, source, options, "csv")


def _listed(
    rows: list[tuple[int, str, dict[str, Any] | None]],
    source: Source,
    options: ReadOptions,
    kind: str,
) -> tuple[list[Fault], list[Reject]]:
    faults: list[Fault] = []
    rejects: list[Reject] = []
    for line, raw, row in rows:
        if row is None:
            what = "a JSON object" if kind == "ndjson" else "as many fields as the header"
            rejects.append(Reject(line, f"expected {what}", raw))
            continue
        node = _text(row.get("node"))
        if not node:
            rejects.append(Reject(line, "node: missing", raw, "node"))
            continue
        try:
            start = _time(row.get("start"), "start", options, source)
            end = _time(row.get("end"), "end", options, source)
        except Unplaced as error:
            field = str(error).split(":", 1)[0]
            rejects.append(Reject(line, str(error), raw, field))
            continue
        if start is None:
            rejects.append(Reject(line, "start: missing", raw, "start"))
            continue
        level = _text(row.get("level"))
        faults.append(
            Fault(line, node, start, end, level, _text(row.get("kind")),
                  _text(row.get("description")), kind, raw)
        )  # fmt: skip
    return faults, rejects


def _time(value: Any, field: str, options: ReadOptions, source: Source) -> datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _days_or_time(value, options.trace_start, field, options, source)


def _days_or_time(
    value: Any, origin: datetime | None, field: str, options: ReadOptions, source: Source
) -> datetime:
    """A time as the module docstring says; relative days need an origin, else a UserError."""
    number: float | None = None
    if isinstance(value, bool) or value is None:
        raise Unplaced(f"{field}: expected a time, got {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return _iso(value, field, options.timezone)
    else:
        raise Unplaced(f"{field}: expected a time, got {value!r}")
    if number != number or number in (float("inf"), float("-inf")):
        raise Unplaced(f"{field}: expected a time, got {value!r}")
    if number >= EPOCH_FROM:
        return datetime.fromtimestamp(number, UTC)
    if origin is None:
        raise UserError(
            f"{source.name}: {field}: {value!r} cannot be placed in time: a number below "
            f"{EPOCH_FROM:.0e} counts days from the trace's start — give it with --trace-start ISO"
        )
    start = origin if origin.tzinfo else origin.replace(tzinfo=UTC)
    return (start + timedelta(days=number)).astimezone(UTC)


def _iso(text: str, field: str, timezone: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text.strip().replace(" UTC", "+00:00"))
    except ValueError:
        expected = "an ISO 8601 time or epoch seconds"
        raise Unplaced(f"{field}: expected {expected}, got {text!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zoneinfo.ZoneInfo(timezone))
    return parsed.astimezone(UTC)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _json_array(text: str, source: Source) -> list[tuple[int, str, Any]]:
    """The elements of a JSON array with the line each starts on and its text."""
    decoder = json.JSONDecoder()
    start = text.index("[") + 1
    found: list[tuple[int, str, Any]] = []
    position, line, counted = start, 1 + text.count("\n", 0, start), start
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text):
            raise UserError(f"{source.name}: the JSON array is not closed (no ']')")
        if text[position] == "]":
            return found
        line += text.count("\n", counted, position)
        counted = position
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise UserError(f"{source.name}: line {error.lineno}: not JSON ({error.msg})") from None
        found.append((line, text[position:end], value))
        position = end
