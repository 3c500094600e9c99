"""`wanka ingest nvidia-smi`: `nvidia-smi --query-gpu=... --format=csv` output into `gpu_metrics`.

Reads what `nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits] [-l N]` prints:

    timestamp, name, index, utilization.gpu [%], memory.used [MiB], power.draw [W]
    2025/01/10 18:33:53.123, NVIDIA H100 80GB HBM3, 0, 100 %, 143771 MiB, 627.40 W

one row per GPU and sample time, the header repeated before every sample set or given once;
output without a header takes its field names from `--columns`. It also reads capture files
that hold many sections (nvidia_gpu_exporter's captures): only the `--query-gpu` CSV sections,
each after a `# $ nvidia-smi --query-gpu=...` line up to the next `# ` banner; other sections
are skipped. How fields map onto DCGM names is `nvidia_smi_fields`.

Each numeric value is one row. `timestamp` (local time in `--tz`, default UTC) gives ts,
else `--at`, else the file's time; host is the `hostname` field, else `--host`, else the file
name's stem ('unknown' on stdin). A value that should be a number and is not, or a row with the
wrong number of values, is rejected with its line and field; the rest of a row is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from warehouse.errors import UserError
from warehouse.ingest import textblocks
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Reject, Source, register
from warehouse.ingest.dcgm import labels_json
from warehouse.ingest.models import ModelNames
from warehouse.ingest.nvidia_smi_fields import (
    COLUMNS,
    DCGM_METRICS,
    LABEL_KEYS,
    SECOND_CHOICE,
    header_cells,
    is_absent,
    is_text_field,
    number,
)

TABLE = "gpu_metrics"
CHUNK_ROWS = 100_000
ROW_COLUMNS = ("ts", "host", "gpu", "uuid", "model", "metric", "value", "labels")
NO_HEADER = "nvidia-smi output without a header: pass --columns"
_PRIORITY = {field: rank for rank, field in enumerate(DCGM_METRICS)}
_QUERY = re.compile(r"--query-gpu[= ](\S+)")
_FORMAT = re.compile(r"--format[= ](\S+)")
_TIME_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")


@register("nvidia-smi", "nvidia-smi --query-gpu CSV output")
def read(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Yield `gpu_metrics` rows in chunks; see the module docstring."""
    reader = QueryCsv(source, options, ModelNames(context.model_names), context.schema(TABLE))
    for line_number, line in textblocks.lines(stream):
        reader.feed(line_number, line)
        if len(reader.rows["metric"]) + len(reader.rejects) >= CHUNK_ROWS:
            yield reader.flush()
    reader.finish()
    yield reader.flush()


class Section:
    """One CSV stream: its (field, unit) pairs, from a header, the command line or --columns."""

    def __init__(self, fields: list[str] | None) -> None:
        self.fields: list[tuple[str, str | None]] | None = (
            [(f.strip(), None) for f in fields] if fields else None
        )


class QueryCsv:
    """The state of one source: mode, the current section, rows not yet handed out."""

    def __init__(
        self, source: Source, options: ReadOptions, models: ModelNames, schema: pa.Schema
    ) -> None:
        self.source, self.options, self.models, self.schema = source, options, models, schema
        try:
            self.zone = ZoneInfo(options.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise UserError(f"unknown time zone {options.timezone!r} (--tz)") from None
        self.host = options.host or (
            "unknown" if source.name == "-" else Path(source.name).stem or "unknown"
        )
        self.capture: bool | None = None  # a capture file with sections, or plain CSV
        self.section: Section | None = None
        self.sections = 0
        self.rows: dict[str, list[object]] = {name: [] for name in ROW_COLUMNS}
        self.rejects: list[Reject] = []

    def feed(self, line_number: int, line: str) -> None:
        """Take one line of the input."""
        text = line.strip()
        if not text:
            return
        if self.capture is None:
            self.capture = text.startswith("#")
            if not self.capture:
                self.section = Section(list(self.options.columns or ()) or None)
        if text.startswith("#"):
            if self.capture:
                self._banner(text)
            return
        if self.section is not None:
            self._csv(line_number, line)

    def _banner(self, text: str) -> None:
        """`# $ nvidia-smi --query-gpu=...` opens a section; any other `# ` banner closes it."""
        if text.startswith("# $"):
            query, fmt = _QUERY.search(text), _FORMAT.search(text)
            self.section = None
            if query is not None:
                noheader = fmt is not None and "noheader" in fmt.group(1).split(",")
                self.section = Section(query.group(1).split(",") if noheader else None)
                self.sections += 1
        elif text.startswith("# "):
            self.section = None

    def _csv(self, line_number: int, line: str) -> None:
        section = self.section
        assert section is not None
        header = header_cells(line)
        if header is not None:
            section.fields = header  # the first header, a repeated one, or a new query
            return
        if section.fields is None:
            raise UserError(f"{self.source.name}: {NO_HEADER} (line {line_number} holds values)")
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(section.fields):
            self.rejects.append(
                Reject(
                    line_number,
                    f"expected {len(section.fields)} comma-separated values (one per field of "
                    f"the header), found {len(values)}",
                    line,
                )
            )
            return
        self._row(line_number, line, section.fields, values)

    def _row(
        self, line_number: int, line: str, fields: list[tuple[str, str | None]], values: list[str]
    ) -> None:
        """One GPU at one time: its columns, labels, and a row per numeric value."""
        columns: dict[str, str] = {}
        labels: list[tuple[str, str]] = []
        readings: list[tuple[str, str, float]] = []
        for (field, unit), value in zip(fields, values, strict=True):
            key = field.lower()
            if is_absent(value):
                continue
            if key in COLUMNS:
                columns[key] = value
                if key == "name":
                    labels.append((LABEL_KEYS[key], value))
                continue
            if is_text_field(key):
                labels.append((LABEL_KEYS.get(key, field), value))
                continue
            reading = number(key, value, unit)
            if reading is not None:
                readings.append((key, field, reading))
            elif key in DCGM_METRICS or unit is not None:
                expected = f"a number in {unit}" if unit else "a number"
                self.rejects.append(
                    Reject(
                        line_number,
                        f"expected {expected} for {field}, found {value!r}",
                        line,
                        field,
                    )
                )
            else:
                labels.append((field, value))
        ts = self._time(line_number, line, columns.get("timestamp"))
        gpu_ok, gpu = self._gpu(line_number, line, columns.get("index"))
        if ts is None or not gpu_ok:
            return
        name = columns.get("name")
        model = self.models.short(name) if name else None
        common = (ts, columns.get("hostname") or self.host, gpu, columns.get("uuid"), model)
        for metric, reading in _metrics(readings):
            row = (*common, metric, reading, labels_json(labels))
            for column, item in zip(self.rows, row, strict=True):
                self.rows[column].append(item)

    def _time(self, line_number: int, line: str, text: str | None) -> datetime | None:
        if text is None:
            moment = self.options.at or self.source.mtime
            if moment is None:
                self.rejects.append(
                    Reject(line_number, "no timestamp field, --at or file time", line)
                )
            return moment
        for fmt in _TIME_FORMATS:
            try:
                return datetime.strptime(text, fmt).replace(tzinfo=self.zone)
            except ValueError:
                continue
        self.rejects.append(
            Reject(
                line_number,
                f"expected a time like 2025/01/10 18:33:53.123 for timestamp, found {text!r}",
                line,
                "timestamp",
            )
        )
        return None

    def _gpu(self, line_number: int, line: str, text: str | None) -> tuple[bool, int | None]:
        """(usable, GPU index): None when not queried; unusable when not an integer."""
        if text is None:
            return True, None
        if text.isascii() and text.isdigit() and int(text) < 2**31:
            return True, int(text)
        self.rejects.append(
            Reject(line_number, f"expected a GPU index (an integer), found {text!r}", line, "index")
        )
        return False, None

    def finish(self) -> None:
        """Say so when a capture file held no `--query-gpu` CSV section at all."""
        if self.capture and not self.sections:
            raise UserError(
                f"{self.source.name}: no nvidia-smi --query-gpu CSV section found (a capture "
                f"file needs '# $ nvidia-smi --query-gpu=... --format=csv' before each)"
            )

    def flush(self) -> Parsed:
        """The rows and rejects gathered since the last flush, as one chunk."""
        arrays = [pa.array(self.rows[name], self.schema.field(name).type) for name in ROW_COLUMNS]
        table = pa.table(arrays, names=list(ROW_COLUMNS))
        chunk = Parsed(TABLE, table, self.rejects)
        self.rows = {name: [] for name in self.rows}
        self.rejects = []
        return chunk


def _metrics(readings: list[tuple[str, str, float]]) -> Iterator[tuple[str, float]]:
    """(metric, value) per reading; of two fields naming one DCGM metric the preferred wins.

    >>> for found in _metrics([("power.draw.instant", "power.draw.instant", 1.0),
    ...                        ("power.draw", "power.draw", 2.0), ("count", "count", 1.0)]):
    ...     print(found)
    ('DCGM_FI_DEV_POWER_USAGE_INSTANT', 1.0)
    ('DCGM_FI_DEV_POWER_USAGE', 2.0)
    ('nvidia_smi.count', 1.0)
    """
    winner: dict[str, str] = {}
    for key, _, _ in readings:
        metric = DCGM_METRICS.get(key)
        if metric is not None and (
            metric not in winner or _PRIORITY[key] < _PRIORITY[winner[metric]]
        ):
            winner[metric] = key
    for key, field, value in readings:
        metric = DCGM_METRICS.get(key)
        if metric is None:
            yield f"nvidia_smi.{field}", value
        elif winner[metric] == key:
            yield metric, value
        elif key in SECOND_CHOICE:
            yield SECOND_CHOICE[key], value
