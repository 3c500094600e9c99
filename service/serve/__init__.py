"""The serve process: what `wanka serve` runs HTTP, pgwire and the scheduler on.

`server.Server` owns the one `Engine` of the process (locked down for user SQL) and is made of
parts, each with `start`, `stop` and `apply(settings.ServeSettings)`: `auth` checks credentials,
`sessions` hands out one `session.Session` per client — `run(sql)` = parse once, authorize, run
under a time limit (`watchdog`) and a row cap, in a turn at `gate` (a few queries' Python at
once) — `writer` ingests and stores remote_write, `scheduler` runs upkeep and refreshes as named
jobs, `feeds` scrapes and polls Slurm. Writes and refreshes take turns through
`writes.WriteGate`; `throttle` slows password guessers on both faces; `metrics` is the
Prometheus text of /metrics (each family declared once in `metric_families`), counting queries
from every face; `memory` keeps the process's memory bounded under many threads.
"""
