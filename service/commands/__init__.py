"""The `wanka` subcommands, one module per family; `service.cli` adds them to the group.

`service.cli` is the `wanka` command group (click): it resolves the database (`--db`, else
`$WANKA_DB`, else `./wanka.duckdb`) and maps errors to exit statuses — 0 on success, 2 for bad
usage or input (SQL errors included), 1 otherwise — with each error one line on stderr. Each
subcommand (`sql`, `ingest`, `refresh`, `retention`, `export`, `simulate`/`demo` in `cluster`,
`serve`, `user`/`token` in `users`, `analyze`, `report`, `health`, `jobstats`, `scrape`) parses
its arguments, calls the warehouse and renders (`service.render`: CSV, JSON, NDJSON, Arrow IPC,
Parquet, each writing an Arrow stream batch by batch; `service.terminal`: tables and progress for
people, quiet when piped). No rule of the warehouse lives here. `serve` starts the HTTP and
PostgreSQL faces on one `service.serve.server.Server` plus its scheduler (with `--tls-cert` /
`--tls-key`, HTTPS and PostgreSQL SSL from one pair).
"""
