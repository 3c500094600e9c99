"""Dimension-side changes the invariant tests apply: a host moved, added or removed."""

from __future__ import annotations

import duckdb


def place_node(con: duckdb.DuckDBPyConnection, host: str, cluster: str) -> None:
    """Put `host` in `cluster`: an UPDATE when the node exists, an INSERT otherwise."""
    if con.execute("SELECT count(*) FROM nodes WHERE host = ?", [host]).fetchall()[0][0]:
        con.execute("UPDATE nodes SET cluster = ? WHERE host = ?", [cluster, host])
    else:
        con.execute("INSERT INTO nodes (host, cluster, gpus) VALUES (?, ?, 2)", [host, cluster])
