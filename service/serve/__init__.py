"""The serve process: what `wanka serve` runs HTTP, pgwire and the scheduler on.

`server.Server` owns the one `Engine` of the process (locked down for user SQL: external access
off, configuration locked, a memory limit), checks credentials (successes cached a minute),
hands out one `session.Session` per client on a pooled cursor — `run(sql)` = parse once,
authorize, run under a time limit (`watchdog`: `cursor.interrupt()` from one thread whose
arm/disarm take no lock) and a row cap, in a turn at `gate` (a few queries' Python at once: 50
threads contending for the GIL made each `SELECT 1` cost 1.7x the CPU; a query still running
after 50 ms gives its place up) — and runs the refresh scheduler in a thread with its own
cursor. Writes and refreshes take turns through `writes.WriteGate`, because a row's batch id is
taken when its write starts and a write committing below a refresh's watermark would never be
seen incrementally; readers never wait. `remote_write` group-commits concurrent remote_write
requests; `feeds` runs the scraper and the Slurm poller as threads; `throttle` slows password
guessers on both faces; `metrics` is the Prometheus text of /metrics, counting queries from
every face; `memory` keeps the process's memory bounded under many threads (4 glibc arenas,
`malloc_trim` every 5 s, Arrow buffers from jemalloc). `pgerror` words a failed query as
PostgreSQL 15 would (each kind's wording in `pgerror_rules`, its position found again in the
client's own text by `sqlspots`), DuckDB's text kept as the detail; `pgtypes` holds PostgreSQL's
names for DuckDB's types and `sqlstates` the SQLSTATE of everything it does not reword.
"""
