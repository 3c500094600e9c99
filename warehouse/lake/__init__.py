"""The lake: wanka's tables as Delta Lake tables that DuckDB and Spark both read.

`delta` reads and writes Delta tables through delta-rs (active files only, watermarks as app
transactions), `layout` says what is where, `export` brings the lake up to the warehouse.
"""
