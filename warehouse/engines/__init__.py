"""Engines that run wanka's catalog: DuckDB (embedded, the default) and Spark (scale-out).

`base.Engine` is the one interface; `duck.DuckLakeEngine` and `spark.SparkEngine` implement it
over the same lake (`warehouse.lake`). `portable` translates DuckDB-dialect SQL for Spark.
"""
