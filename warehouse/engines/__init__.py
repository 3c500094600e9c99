"""Engines over the lake: wanka's catalog — tables, dynamic-table SQL, model functions — run by
DuckDB, or by Apache Spark past one machine, with nothing rewritten by hand.

`base.LakeEngine` is the one interface (register the lake's tables and the model UDFs, run
DuckDB-dialect SQL, commit or append through delta-rs, declared `Capabilities`);
`duck.DuckLakeEngine` is DuckDB over the lake's Arrow datasets, the reference the other is
compared with, and `spark.SparkEngine` a Spark session (local, `--master`, or Spark Connect) with
the settings that make it agree with DuckDB (UTC, ANSI). `spark_udfs` registers the model
functions as Arrow UDFs from the same Python definitions; `spark_files` commits files Spark's
tasks wrote through delta-rs, so watermarks stay in one place. `rules` and `portable` translate
DuckDB SQL for Spark and name what cannot be translated (`portable.portability_problems`, called
once at CREATE DYNAMIC TABLE); `window` finds a dynamic table's time bucket; `refresh` refreshes
the lake's dynamic tables on any engine (window / append / full), one Delta commit with its
watermark per table. The lake itself is `warehouse.lake`.
"""
