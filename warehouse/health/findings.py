"""`wanka health` and GET /v1/health: which GPUs and nodes to watch, drain or replace, each with
the rule that fired and its evidence.

The rules are SQL (sql/health/*_findings.sql) over gpu_events, the per-window means of the
gpu_windows dynamic table and nccl_results; their thresholds, windows and states are rows of
wanka.health_rules, which an admin edits. Each rule yields findings — when it first held, its
evidence, whether it holds now — and the report shows the current ones: a GPU's state is the
worst of its findings' (ok < watch < drain < replace), a node's the worst of its GPUs' and its
own. The report is judged as of the newest telemetry, not the wall clock, so a warehouse loaded
from files reads as it did then.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import duckdb

from warehouse.health import risk
from warehouse.kernel.catalog import sql_dir
from warehouse.tsdb.relations import BATCHES, SERIES

STATES = ("ok", "watch", "drain", "replace")
_RULE_COLUMNS = ("rule", "state", "threshold", "window_s", "description")
#: The dynamic table of every finding (sql/dynamic/health_findings.sql) and what it reads.
FINDINGS = "health_findings"
WINDOWS = "gpu_windows"


def refresh_inputs(cur: duckdb.DuckDBPyConnection) -> None:
    """Bring gpu_windows and health_findings up to the stored data, as `wanka serve`'s scheduler
    does every minute, for a command run on a file nobody serves, when a batch or a rule changed
    since this last did it: gpu_windows folds only what is new, health_findings is recomputed.
    Nothing changed, nothing is refreshed (nor the refresh machinery imported: `wanka health`
    answers within a second)."""
    signature = cur.execute(_SIGNATURE).fetchone()
    said = cur.execute("SELECT value FROM wanka.settings WHERE key = ?", [_KEY]).fetchone()
    if signature is None or said is None or said[0] != signature[0]:
        from warehouse.dynamic.refresh import refresh

        refresh(cur, WINDOWS)
        refresh(cur, FINDINGS)
        cur.execute(
            "INSERT OR REPLACE INTO wanka.settings VALUES (?, ?, now())",
            [_KEY, signature[0] if signature else None],
        )
    risk.refresh(cur)  # node_risk: beside each state, how likely the node is to fail soon


#: What health_findings was last recomputed from: the newest batch of each table it reads
#: and the rules.
_KEY = "health_findings_inputs"
_SIGNATURE = f"""
SELECT concat_ws(':',
    (SELECT max(batch_id) FROM {BATCHES}), (SELECT max(batch_id) FROM gpu_events),
    (SELECT max(batch_id) FROM nccl_results), (SELECT max(batch_id) FROM jobs),
    (SELECT md5(string_agg(concat_ws(',', rule, state, threshold, window_s), ';' ORDER BY rule))
     FROM wanka.health_rules))
"""


@functools.cache
def _urgent_sql() -> str:
    return (sql_dir() / "health" / "urgent_events.sql").read_text(encoding="utf-8")


def urgent_after(cur: duckdb.DuckDBPyConnection, after: int) -> int | None:
    """The newest batch past `after` with an event that drains or replaces a GPU at once
    (sql/health/urgent_events.sql), or None: the scheduler then refreshes health_findings
    without waiting for its freshness target."""
    row = cur.execute(_urgent_sql().format(after=int(after))).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def newest_event_batch(cur: duckdb.DuckDBPyConnection) -> int:
    """The newest batch with a GPU event (0: none): where `urgent_after` starts looking."""
    row = cur.execute("SELECT max(batch_id) FROM gpu_events").fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def findings(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every finding, current or past, as of health_findings' last refresh, as dicts of its
    columns (sql/health/findings.sql)."""
    result = cur.execute(f"SELECT * FROM {FINDINGS}")
    names = [d[0] for d in result.description]
    return [dict(zip(names, r, strict=True)) for r in result.fetchall()]


def _finding(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "rule": row["rule"], "state": row["state"], "count": row["n"],
        "first": _iso(row["since"]), "flagged": _iso(row["flagged_at"]),
        "last": _iso(row["until"]),
        "evidence": [{k: _iso(v) for k, v in e.items()} for e in row["evidence"]],
    }  # fmt: skip


def _worse(entry: dict[str, Any], state: str) -> None:
    if STATES.index(state) > STATES.index(entry["state"]):
        entry["state"] = state


def report(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """{"as_of", "counts", "gpus", "nodes", "rules"}: every GPU or node not ok, worst first.

    A GPU's state is the worst of its current findings'; a node's the worst of its GPUs' and
    of its own (a silent host, a low nccl-tests bandwidth).
    """
    current = [row for row in findings(cur) if row["current"]]
    gpus: dict[tuple[str, int], dict[str, Any]] = {}
    nodes: dict[str, dict[str, Any]] = {}
    for row in current:
        node = nodes.setdefault(row["host"], {"host": row["host"], "state": "ok", "gpus": [],
                                              "rules": []})  # fmt: skip
        _worse(node, row["state"])
        if row["gpu"] is None:
            node["rules"].append(_finding(row))
            continue
        key = (row["host"], row["gpu"])
        entry = gpus.setdefault(key, {"host": row["host"], "gpu": row["gpu"], "uuid": row["uuid"],
                                      "state": "ok", "rules": []})  # fmt: skip
        entry["rules"].append(_finding(row))
        _worse(entry, row["state"])
        if row["gpu"] not in node["gpus"]:
            node["gpus"].append(row["gpu"])
    known = cur.execute(
        f"SELECT count(DISTINCT (host, gpu)), count(DISTINCT host) FROM {SERIES} "
        "WHERE gpu IS NOT NULL"
    ).fetchone()
    as_of = cur.execute(f"SELECT max(ts_max) FROM {BATCHES}").fetchone()
    assert known is not None and as_of is not None
    worst = sorted(gpus.values(), key=lambda g: (-STATES.index(g["state"]), g["host"], g["gpu"]))
    counts = {s: sum(1 for g in gpus.values() if g["state"] == s) for s in STATES[1:]}
    counts["ok"] = int(known[0]) - len(gpus)
    node_counts = {s: sum(1 for n in nodes.values() if n["state"] == s) for s in STATES[1:]}
    rules = cur.execute(
        "SELECT rule, state, threshold, window_s, description FROM wanka.health_rules ORDER BY rule"
    ).fetchall()
    scored = risk.of_nodes(cur, list(nodes))
    for host, node in nodes.items():  # risk beside state: null where node_risk has no evidence
        node["risk"] = scored.get(host)
    return {
        "as_of": _iso(as_of[0]),
        "counts": {
            "gpus": counts,
            "nodes_flagged": len(nodes),
            "nodes": int(known[1]),
            "node_states": node_counts,
        },
        "gpus": worst,
        "nodes": sorted(nodes.values(), key=lambda n: (-STATES.index(n["state"]), n["host"])),
        "rules": [dict(zip(_RULE_COLUMNS, r, strict=True)) for r in rules],
        "risk": risk.summary(cur),
    }


def render(found: dict[str, Any], limit: int = 50) -> str:
    """The report as text: the counts, then one line per finding (a host's own ones with gpu
    '-') with its newest evidence."""
    counts = found["counts"]["gpus"]
    lines = [
        f"as of {found['as_of']}: {counts['ok']:,} GPUs ok, {counts['watch']:,} watch, "
        f"{counts['drain']:,} drain, {counts['replace']:,} replace "
        f"({found['counts']['nodes_flagged']:,} of {found['counts']['nodes']:,} nodes flagged)"
    ]
    entries = [(n["host"], "-", n["rules"]) for n in found["nodes"] if n["rules"]]
    entries += [(g["host"], str(g["gpu"]), g["rules"]) for g in found["gpus"]]
    if entries:
        lines.append("")
        lines.append(f"{'state':<8} {'host':<20} {'gpu':>3}  {'rule':<18} {'n':>4}  evidence")
    for host, gpu, rules in entries[:limit]:
        for rule in rules:
            latest = rule["evidence"][0] if rule["evidence"] else {}
            what = latest.get("detail") or latest.get("kind") or ""
            code = f"XID {latest['code']}: " if latest.get("code") is not None else ""
            lines.append(
                f"{rule['state']:<8} {host:<20} {gpu:>3}  {rule['rule']:<18} "
                f"{rule['count']:>4}  {code}{what} (last {rule['last']})"
            )
    if len(entries) > limit:
        lines.append(f"... and {len(entries) - limit:,} more (--format json for all)")
    lines.extend(risk.render(found.get("risk") or {"nodes": [], "counts": {}}))
    return "\n".join(lines)
