"""The kernel: the one DuckDB database file, its schema and its tables, below everything else.

`engine` is the only place that opens DuckDB: it resolves the file (`--db`, then `$WANKA_DB`,
then `./wanka.duckdb`), opens it with fixed settings (UTC, no extension downloads, row groups of
1,048,576 rows: a scan walks the zone map of every row group, so at billions of samples DuckDB's
default of 122,880 made the read of the newest batch 8x slower; `$WANKA_ROW_GROUP_SIZE`
overrides), turns DuckDB's lock error into one line naming the process that holds the file,
applies the schema steps the file lacks (`migrations`), reloads the reference tables whose CSV
changed (`reference`, each reload logged so the dynamic tables joining one refresh) and binds
the model functions (`udfs.registry`). It lends pooled cursors to the serve process (`lend` /
`take_back`: a new cursor costs a `USE` statement). `transactions.transaction(cur)` is the one
way wanka opens a transaction of its own (BEGIN, COMMIT, ROLLBACK on any error).

`catalog` reads `sql/` into typed definitions (numbered schema steps, reference tables; steps
may leave gaps, and every step a file has not recorded is applied, not just those above the
highest); `tables` is the one table registry — which tables are tracked, reference, keyed
(ingest's replace keys), loaded by the demo, exported to the lake — read from the
`-- table NAME: roles` line above each CREATE TABLE in `sql/schema/`, so nothing else lists
tables. `arrow_tables` gives a table's Arrow schema and appends Arrow rows by name.
"""
