"""Apache Spark over the lake: the same tables, SQL and model functions past one machine.

A session is local (`local[N]`, tests and one machine), a cluster (`--master spark://...`,
`yarn`, `k8s://...`) or Spark Connect (`--remote sc://host:15002`). Tables are the Delta log's
active files (delta-rs lists them; Spark reads the Parquet), so Spark needs no Delta jars;
SQL is translated by `warehouse.engines.portable`; model functions are the `udfs/` Python
definitions registered as Arrow UDFs (`warehouse.engines.spark_udfs`).

The settings that make Spark's answers agree with DuckDB's live in `SETTINGS`: UTC session
time zone (DuckDB's TimeZone is UTC too), ANSI mode (overflow and division by zero fail
loudly instead of turning into NULL), exact Parquet timestamps.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import pyarrow as pa

from warehouse.engines.base import Capabilities, LakeEngine
from warehouse.engines.portable import to_spark
from warehouse.engines.spark_files import append_task_files
from warehouse.lake.delta import PARTITION_COLUMN, LakeTable

#: Session settings every wanka Spark session gets (see the module docstring).
SETTINGS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
    "spark.sql.caseSensitive": "false",
    # files Spark's tasks write into a Delta table: microsecond UTC timestamps, as delta-rs's
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
#: Settings for a local session only: small shuffles, no UI, a bounded driver.
LOCAL_SETTINGS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.showConsoleProgress": "false",
}

#: For tests and other tiny inputs: compiling whole-stage code and re-planning adaptively cost
#: more than they save below a few MB (measured: 15 analyses 68 s → 18 s on a busy 2-core box).
SMALL_DATA_SETTINGS: dict[str, str] = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
}

CAPABILITIES = Capabilities(
    name="spark",
    dialect="spark",
    distributed=True,
    duckdb_only_sql=False,
    native_delta_merge=False,  # true once delta-spark jars are on the classpath (docs/lake.md)
    task_written_files=True,
)


def spark_session(
    master: str | None = "local[1]",
    remote: str | None = None,
    *,
    app_name: str = "wanka",
    config: dict[str, str] | None = None,
) -> Any:
    """A Spark session with wanka's settings: local, on a cluster master, or Spark Connect.

    Python workers run the interpreter running wanka (`PYSPARK_PYTHON`), so the model UDFs
    find the same `udfs` package and pyarrow.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if not remote and (master or "local").startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # PySpark 4.3 asks for pandas < 3 (wanka's Arrow UDFs do not use pandas) and for type hints
    # on Arrow UDFs (wanka's take *columns, and say their type explicitly)
    warnings.filterwarnings("ignore", message=".*pandas.*")
    warnings.filterwarnings("ignore", message=".*type hints for arrow UDF.*")
    from pyspark.sql import SparkSession  # late: importing pyspark costs a second

    builder: Any = SparkSession.builder.appName(app_name)
    if remote:
        builder = builder.remote(remote)
    else:
        builder = builder.master(master or "local[1]")
        local = (master or "local").startswith("local")
        for key, value in (LOCAL_SETTINGS if local else {}).items():
            builder = builder.config(key, value)
    for key, value in {**SETTINGS, **(config or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if not remote:
        session.sparkContext.setLogLevel("ERROR")
    return session


class SparkEngine(LakeEngine):
    """A Spark session whose temporary views are the lake's Delta tables."""

    capabilities = CAPABILITIES

    def __init__(self, session: Any) -> None:
        self.spark = session
        for key, value in SETTINGS.items():
            if not key.startswith("spark.sql.parquet"):
                session.conf.set(key, value)  # a shared session may have been built without them

    def register_table(
        self, name: str, table: LakeTable, *, files: list[str] | None = None
    ) -> None:
        chosen = table.files() if files is None else files
        schema = table.schema()
        if chosen:
            frame = self.spark.read.parquet(*chosen)
        else:  # Spark cannot read zero files: an empty frame of the table's schema
            frame = self.spark.createDataFrame(schema.empty_table())
        columns = [c for c in schema.names if c != PARTITION_COLUMN]
        frame.select(*[f"`{c}`" for c in columns]).createOrReplaceTempView(name)

    def register_udfs(self) -> list[str]:
        from warehouse.engines.spark_udfs import register_models

        return register_models(self.spark)

    def sql(self, query: str, values: dict[str, object] | None = None) -> pa.Table:
        """Translate (DuckDB → Spark, with wanka's rules) and run; rows as Arrow."""
        return self.spark.sql(to_spark(query, values)).toArrow()

    def sql_spark(self, query: str) -> Any:
        """The DataFrame of a DuckDB-dialect query, for work that stays in Spark."""
        return self.spark.sql(to_spark(query))

    def append(self, target: LakeTable, query: str, *, watermark: int) -> int:
        """Large appends: Spark's tasks write the Parquet files, one delta-rs commit adds them.

        The rows never pass through the driver: each task writes its files into a staging
        folder inside the table, the files move next to the table's others, and one Delta
        commit (with the watermark) makes them visible — or none of them, if anything failed.
        """
        return append_task_files(self.sql_spark(query), target, watermark)

    def close(self) -> None:
        """Leave the session running: it is shared (tests, a long-lived cluster driver)."""
