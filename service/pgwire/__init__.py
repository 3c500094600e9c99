"""The PostgreSQL wire protocol (v3) face of wanka: psql, Grafana, Superset, Metabase, DBeaver.

`start(server, host, port, tls=None)` serves a core `Server` from an asyncio loop in a daemon
thread and returns a handle with `.port` and `.stop()`.
"""

from __future__ import annotations

from service.pgwire.server import Handle, start

__all__ = ["Handle", "start"]
