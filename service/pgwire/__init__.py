"""The PostgreSQL wire protocol (v3) face of wanka: psql, Grafana, Superset, Metabase, DBeaver.

`start(server, host, port, tls=None)` serves a `service.serve.server.Server` — a daemon thread
accepts, each connection runs on a thread and event loop (uvloop) of its own with its DuckDB work
inline, one `Session` per connection, as PostgreSQL gives each a process (one loop shared by every
client starved pgwire under mixed load) — and returns a handle with `.port` and `.stop()`.

`server` accepts (at most `Limits.max_connections`, and `max_connections_per_user` per user, then
53300 as PostgreSQL answers); `startup` negotiates SSL and cancel requests and runs SCRAM-SHA-256
(`scram`); `connection` is the message state machine (simple and extended query, transaction status,
skip-to-Sync after an error) and `cursors` runs what a portal holds (session SET/SHOW from
`settings`, transaction control, DECLARE/FETCH, queries through `Session.run`, COPY via `copyout`).
`statements` splits and classifies what a client sends and parses it once with sqlglot (PostgreSQL
dialect); `compat/` rewrites that tree for DuckDB: catalog relations from `compat/views.sql` inlined
as subqueries over `duckdb_*()` (so the role policy sees only catalog functions), ~70 macros from
`compat/macros.sql` in the in-memory catalog (`memory.pg_compat`), small rules for casts,
`OPERATOR(...)`, `pg_catalog.` names, `version()` and integer division; the catalog views are also
created as views in `memory.pg_compat_pg_catalog` / `_is` only so that pg_class and
information_schema list them. `catalogued` does what depends on the session per execution: names
along a non-default search_path (`compat/paths.py`) and PostgreSQL's result types
(`compat/result_types.py`). Parameters are inlined as typed literals (`params`), which gives untyped
parameters PostgreSQL's context typing. Results leave as DataRows built a whole Arrow batch at a
time (`rows`: Arrow casts in `textenc` / `binenc`, lengths and headers as numpy big-endian arrays;
large batches encoded ahead on a small shared pool), batches of at most 64 rows framed in Python
(`small`: Arrow kernels cost ~20 µs a call), and `outbox` sends a round's messages in one write at
Sync, Flush or a simple query's end; `cursors` and `copyout` see the connection through the small
`channel.Channel` protocol. `explain` and `explaining` answer EXPLAIN as PostgreSQL 15 prints plans
(`compat/plan.py` maps DuckDB's operators to PostgreSQL's nodes, made with their costs by
`compat/plan_ops.py`, a documented cost model, and printed by `compat/plan_format.py`);
`EXPLAIN (FORMAT DUCKDB)` gives DuckDB's own. The catalog SQL of psql, SQLAlchemy, pgjdbc, Grafana
and Superset is a test corpus (`tests/service/pgwire/corpus/`), and tests diff results with a real
PostgreSQL 15.
"""

from __future__ import annotations

from service.pgwire.server import Handle, start

__all__ = ["Handle", "start"]
