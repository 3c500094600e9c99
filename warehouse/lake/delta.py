"""Delta tables of the lake, read and written through `deltalake` (delta-rs, no JVM).

Every reader goes through the Delta log's active files (`DeltaTable.file_uris()` / its Arrow
dataset), never a glob of the folder: after a MERGE or a partition overwrite the folder still
holds the replaced files until VACUUM. Every wanka commit carries its watermark — the highest
batch id (or change sequence number) the table reflects — as a Delta app transaction
(`txn` action) of the same commit, so the data and the watermark move together or not at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import CommitProperties, DeltaTable, Transaction

#: Delta app id under which wanka records a table's watermark.
APP_ID = "wanka"
#: Table properties of every table wanka writes: no deletion vectors (Spark without the Delta
#: jars and DuckDB without its delta extension read files, not vectors), no CDF.
TABLE_CONFIG = {"delta.enableDeletionVectors": "false"}
#: The partition column added to time-series tables: the UTC day of `ts`.
PARTITION_COLUMN = "ts_day"


@dataclass(frozen=True)
class FileStats:
    """One active data file of a Delta table, with what its log entry says about it."""

    uri: str
    day: date | None  # the ts_day partition, for time series
    max_batch_id: int | None
    min_ts: datetime | None
    max_ts: datetime | None


@dataclass(frozen=True)
class LakeTable:
    """A Delta table in the lake, by folder."""

    path: Path

    @property
    def exists(self) -> bool:
        return DeltaTable.is_deltatable(str(self.path))

    def open(self) -> DeltaTable:
        return DeltaTable(str(self.path))

    def watermark(self) -> int:
        """The batch id / sequence number the table reflects; -1 when it does not exist yet."""
        if not self.exists:
            return -1
        version = self.open().transaction_version(APP_ID)
        return -1 if version is None else int(version)

    def metadata(self) -> dict[str, Any]:
        """wanka's custom metadata of the latest commit (operation, rows, watermark)."""
        if not self.exists:
            return {}
        for entry in self.open().history(1):
            return {k: v for k, v in entry.items() if k.startswith("wanka.")}
        return {}

    def commits_since(self, watermark: int) -> list[dict[str, Any]]:
        """wanka's metadata of each commit whose watermark is above `watermark`, oldest first."""
        if not self.exists:
            return []
        found = []
        for entry in self.open().history():
            mark = entry.get("wanka.watermark")
            if mark is not None and int(mark) > watermark:
                found.append({k: v for k, v in entry.items() if k.startswith("wanka.")})
        return list(reversed(found))

    def files(self) -> list[str]:
        """The active data files (URIs) of the current version."""
        return list(self.open().file_uris()) if self.exists else []

    def file_stats(self) -> list[FileStats]:
        """Per active file: its URI, day partition and the batch-id and `ts` ranges it holds.

        From the Delta log's statistics: choosing the files of a delta reads no data.
        """
        if not self.exists:
            return []
        actions = pa.table(self.open().get_add_actions(flatten=True))
        names = set(actions.column_names)

        def column(name: str) -> list[Any]:
            return actions.column(name).to_pylist() if name in names else [None] * len(actions)

        return [
            FileStats(str(self.path / path), day, batch_hi, ts_lo, ts_hi)
            for path, day, batch_hi, ts_lo, ts_hi in zip(
                column("path"),
                column(f"partition.{PARTITION_COLUMN}"),
                column("max.batch_id"),
                column("min.ts"),
                column("max.ts"),
                strict=True,
            )
        ]

    def partition_columns(self) -> list[str]:
        return list(self.open().metadata().partition_columns) if self.exists else []

    def dataset(self) -> ds.Dataset:
        """The current version as an Arrow dataset (partition values as columns)."""
        return self.open().to_pyarrow_dataset()

    def schema(self) -> pa.Schema:
        return self.dataset().schema


def commit_properties(watermark: int, operation: str, **extra: object) -> CommitProperties:
    """The app transaction and metadata every wanka commit carries."""
    metadata = {"wanka.watermark": str(watermark), "wanka.operation": operation}
    metadata |= {
        f"wanka.{k}": json.dumps(v) if not isinstance(v, str) else v for k, v in extra.items()
    }
    return CommitProperties(
        custom_metadata=metadata, app_transactions=[Transaction(APP_ID, watermark)]
    )


def write_json_atomically(path: Path, value: object) -> None:
    """Replace `path` with `value` as JSON; a reader sees the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True, default=str))
    tmp.replace(path)
