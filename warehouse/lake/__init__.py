"""The lake: wanka's tables as Delta Lake tables that DuckDB and Spark both read.

`delta` reads and writes them through delta-rs, no JVM (active files from the Delta log — never
a glob of the folder, which after a MERGE still holds the replaced files —, per-file statistics,
a table's watermark as a Delta app transaction in the same commit); `layout` says what the
warehouse exports and how (column lists from the database, JSON as text, a `ts_day` partition
for time series, dynamic-table definitions in `_wanka/dynamic_tables.json`); `export` is
`wanka export --lake DIR`: in one DuckDB snapshot, per table one commit — create, append of the
batches above the watermark, MERGE by key or a rewrite of the affected days from the logged old
rows, or a whole rewrite with the reason when the rows were not logged. A killed export re-runs
from each table's last commit. The engines that read the lake are `warehouse.engines`.
"""
