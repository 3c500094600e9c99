"""Risk beside state: the node_risk dynamic table (sql/dynamic/node_risk.sql) in `wanka health`
and GET /v1/health — the nodes whose history and precursors put them at 'watch' or 'drain', with
their score and its parts, as of the newest evidence."""

from __future__ import annotations

from typing import Any

import duckdb

#: The dynamic tables of the score, sources first.
TABLES = ("node_risk_fleet", "node_risk_settings", "node_risk")
_COLUMNS = ("node", "score", "state", "history_ratio", "precursor", "growth", "faults", "drains",
            "node_fails", "gpu_failures", "precursors", "sbe_recent", "nvlink_recent",
            "pcie_replay_recent", "last_signal_at")  # fmt: skip


def present(cur: duckdb.DuckDBPyConnection, name: str = "node_risk") -> bool:
    """Whether the dynamic table is there (a person may have dropped it)."""
    found = cur.execute("SELECT count(*) FROM wanka.dynamic_tables WHERE name = ?", [name])
    row = found.fetchone()
    return bool(row and row[0])


#: What node_risk was last refreshed from here: the evidence and the settings, with their
#: logged updates and deletes.
_KEY = "node_risk_inputs"
_SIGNATURE = """
SELECT concat_ws(':',
    (SELECT coalesce(max(batch_id), 0) || '/' || count(*) FROM node_signals),
    (SELECT coalesce(max(batch_id), 0) || '/' || count(*) FROM risk_settings),
    (SELECT coalesce(max(seq), 0) FROM wanka.table_changes
     WHERE table_name IN ('node_signals', 'risk_settings')))
"""


def refresh(cur: duckdb.DuckDBPyConnection) -> None:
    """Bring the score up to the stored evidence, sources first, when the evidence or the
    settings changed since this last did it (nothing is imported or read otherwise)."""
    if not present(cur):
        return
    signature = cur.execute(_SIGNATURE).fetchone()
    said = cur.execute("SELECT value FROM wanka.settings WHERE key = ?", [_KEY]).fetchone()
    if signature is not None and said is not None and said[0] == signature[0]:
        return
    from warehouse.dynamic.refresh import pending
    from warehouse.dynamic.refresh import refresh as refresh_table

    for name in TABLES:
        if present(cur, name) and pending(cur, name):
            refresh_table(cur, name)
    cur.execute(
        "INSERT OR REPLACE INTO wanka.settings VALUES (?, ?, now())",
        [_KEY, signature[0] if signature else None],
    )


def of_nodes(cur: duckdb.DuckDBPyConnection, hosts: list[str]) -> dict[str, dict[str, Any]]:
    """node_risk's score and state of each of `hosts` that has a row there."""
    if not hosts or not present(cur):
        return {}
    rows = cur.execute(
        "SELECT node, score, state FROM node_risk WHERE list_contains(?, node)", [hosts]
    ).fetchall()
    return {node: {"score": score, "state": state} for node, score, state in rows}


def summary(cur: duckdb.DuckDBPyConnection, limit: int = 50) -> dict[str, Any]:
    """{"as_of", "counts": {ok, watch, drain}, "nodes": the riskiest nodes not ok, worst first}."""
    if not present(cur):
        return {"as_of": None, "counts": {}, "nodes": []}
    counts = dict(cur.execute("SELECT state, count(*) FROM node_risk GROUP BY state").fetchall())
    as_of = cur.execute("SELECT max(as_of) FROM node_risk").fetchone()
    rows = cur.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM node_risk WHERE state <> 'ok' "
        "ORDER BY score DESC, node LIMIT ?",
        [limit],
    ).fetchall()
    nodes = [
        {
            k: (v.isoformat() if hasattr(v, "isoformat") else v)
            for k, v in zip(_COLUMNS, r, strict=True)
        }
        for r in rows
    ]
    return {
        "as_of": as_of[0].isoformat() if as_of and as_of[0] else None,
        "counts": {s: int(counts.get(s, 0)) for s in ("ok", "watch", "drain")},
        "nodes": nodes,
    }


def render(risk: dict[str, Any], limit: int = 20) -> list[str]:
    """The risk section of `wanka health`'s text."""
    if not risk["nodes"] and not risk["counts"]:
        return []
    counts = risk["counts"]
    lines = [
        "",
        f"risk (node_risk, as of {risk['as_of']}): {counts.get('drain', 0):,} drain, "
        f"{counts.get('watch', 0):,} watch, {counts.get('ok', 0):,} ok",
    ]
    if risk["nodes"]:
        lines.append(
            f"{'risk':<8} {'host':<38} {'score':>7} {'history':>8} {'precursor':>9} "
            f"{'growth':>7}  evidence"
        )
    for node in risk["nodes"][:limit]:
        evidence = (
            f"{node['faults']} faults, {node['drains']} drains, {node['node_fails']} NODE_FAIL, "
            f"{node['gpu_failures']} GPU failures, {node['precursors']} precursors"
        )
        recent = [
            f"{node[f'{kind}_recent']} {name}"
            for kind, name in (("sbe", "SBE"), ("nvlink", "NVLink"), ("pcie_replay", "PCIe replay"))
            if node[f"{kind}_recent"]
        ]
        if recent:
            evidence += f" ({', '.join(recent)} increases in the last growth_recent_h)"
        lines.append(
            f"{node['state']:<8} {node['node']:<38} {node['score']:>7.2f} "
            f"{node['history_ratio']:>8.2f} {node['precursor']:>9.2f} {node['growth']:>7.2f}  "
            f"{evidence}"
        )
    return lines
