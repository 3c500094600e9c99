"""Files written by Spark's tasks, committed to a Delta table by delta-rs in one commit.

Spark here has no Delta jars, so it cannot commit to a Delta table itself; it can write
Parquet. The commit is delta-rs's `create_write_transaction` with one `AddAction` per file:
the same atomicity as a native Delta writer (readers see all of the files or none), without
moving rows through the driver. Where the Delta jars exist (`io.delta:delta-spark`), Spark's
own `MERGE INTO` / `INSERT INTO delta.`path`` does this instead (docs/lake.md).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake.transaction import AddAction, RemoveAction

from warehouse.lake.delta import LakeTable, commit_properties

#: Spark SQL type of each Arrow type a wanka table holds (the target's schema rules).
_SPARK_TYPES = {
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float64(): "double",
    pa.string(): "string",
    pa.large_string(): "string",
    pa.bool_(): "boolean",
    pa.date32(): "date",
}


def _spark_type(kind: pa.DataType) -> str | None:
    if pa.types.is_timestamp(kind):
        return "timestamp"
    return _SPARK_TYPES.get(kind)


def conform(frame: Any, schema: pa.Schema) -> Any:
    """`frame`'s columns in the target's order and types (what its other files hold)."""
    from pyspark.sql import functions as F

    columns = []
    for field in schema:
        kind = _spark_type(field.type)
        column = F.col(f"`{field.name}`")
        columns.append((column.cast(kind) if kind else column).alias(field.name))
    return frame.select(*columns)


def append_task_files(frame: Any, target: LakeTable, watermark: int) -> int:
    """Write `frame` with Spark into `target`'s folder and add the files in one Delta commit."""
    schema = target.schema()
    staging = target.path / f"_wanka_staging_{uuid.uuid4().hex}"
    try:
        conform(frame, schema).write.mode("overwrite").parquet(str(staging))
        actions: list[AddAction | RemoveAction] = []
        rows = 0
        for written in sorted(staging.glob("*.parquet")):
            final = target.path / f"part-spark-{uuid.uuid4().hex}.parquet"
            written.replace(final)  # same folder tree: a rename, not a copy
            count = pq.read_metadata(final).num_rows
            rows += count
            actions.append(
                AddAction(
                    path=final.name,
                    size=final.stat().st_size,
                    partition_values={},
                    modification_time=int(time.time() * 1000),
                    data_change=True,
                    stats=json.dumps({"numRecords": count}),
                )
            )
        target.open().create_write_transaction(
            actions,
            mode="append",
            schema=schema,
            commit_properties=commit_properties(watermark, "append", rows=rows, files=len(actions)),
        )
        return rows
    finally:
        shutil.rmtree(staging, ignore_errors=True)
