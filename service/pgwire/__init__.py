"""The PostgreSQL wire protocol (v3) face of wanka: psql, Grafana, Superset, Metabase, DBeaver.

`start(server, host, port, tls=None)` serves a `service.serve.server.Server` — a daemon thread
accepts, each connection runs on a thread and event loop of its own — and returns a handle with
`.port` and `.stop()`.
"""

from __future__ import annotations

from service.pgwire.server import Handle, start

__all__ = ["Handle", "start"]
