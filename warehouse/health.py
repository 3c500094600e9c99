"""`wanka health` and GET /v1/health: which GPUs and nodes to watch, drain or replace, each with
the rule that fired and its evidence.

The rules are SQL over gpu_events and the telemetry (sql/health/gpu_health.sql); their
thresholds, windows and states are rows of wanka.health_rules, which an admin edits. A GPU's
state is the worst of the rules it breaks (ok < watch < drain < replace), a node's the worst of
its GPUs'. The report is judged as of the newest telemetry, not the wall clock, so a warehouse
loaded from files reads as it did then.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import duckdb

from warehouse.catalog import sql_dir

STATES = ("ok", "watch", "drain", "replace")
_RULE_COLUMNS = ("rule", "state", "threshold", "window_s", "description")


@functools.cache
def _query() -> str:
    return (sql_dir() / "health" / "gpu_health.sql").read_text(encoding="utf-8")


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def report(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """{"as_of", "counts", "gpus", "nodes", "rules"}: every GPU or node not ok, worst first."""
    result = cur.execute(_query())
    names = [d[0] for d in result.description]
    rows = [dict(zip(names, r, strict=True)) for r in result.fetchall()]
    gpus: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        key = (row["host"], row["gpu"])
        entry = gpus.setdefault(key, {"host": row["host"], "gpu": row["gpu"], "uuid": row["uuid"],
                                      "state": "ok", "rules": []})  # fmt: skip
        entry["rules"].append({
            "rule": row["rule"], "state": row["state"], "count": row["n"],
            "first": _iso(row["first_ts"]), "last": _iso(row["last_ts"]),
            "evidence": [{k: _iso(v) for k, v in e.items()} for e in row["evidence"]],
        })  # fmt: skip
        if STATES.index(row["state"]) > STATES.index(entry["state"]):
            entry["state"] = row["state"]
    nodes: dict[str, dict[str, Any]] = {}
    for entry in gpus.values():
        node = nodes.setdefault(entry["host"], {"host": entry["host"], "state": "ok", "gpus": []})
        node["gpus"].append(entry["gpu"])
        if STATES.index(entry["state"]) > STATES.index(node["state"]):
            node["state"] = entry["state"]
    known = cur.execute(
        "SELECT count(DISTINCT (host, gpu)), count(DISTINCT host) FROM wanka.gpu_series "
        "WHERE gpu IS NOT NULL"
    ).fetchone()
    as_of = cur.execute("SELECT max(ts_max) FROM wanka.sample_batches").fetchone()
    assert known is not None and as_of is not None
    worst = sorted(gpus.values(), key=lambda g: (-STATES.index(g["state"]), g["host"], g["gpu"]))
    counts = {s: sum(1 for g in gpus.values() if g["state"] == s) for s in STATES[1:]}
    counts["ok"] = int(known[0]) - len(gpus)
    rules = cur.execute(
        "SELECT rule, state, threshold, window_s, description FROM wanka.health_rules ORDER BY rule"
    ).fetchall()
    return {
        "as_of": _iso(as_of[0]),
        "counts": {"gpus": counts, "nodes_flagged": len(nodes), "nodes": int(known[1])},
        "gpus": worst,
        "nodes": sorted(nodes.values(), key=lambda n: (-STATES.index(n["state"]), n["host"])),
        "rules": [dict(zip(_RULE_COLUMNS, r, strict=True)) for r in rules],
    }


def render(found: dict[str, Any], limit: int = 50) -> str:
    """The report as text: the counts, then one line per flagged GPU with its worst evidence."""
    counts = found["counts"]["gpus"]
    lines = [
        f"as of {found['as_of']}: {counts['ok']:,} GPUs ok, {counts['watch']:,} watch, "
        f"{counts['drain']:,} drain, {counts['replace']:,} replace "
        f"({found['counts']['nodes_flagged']:,} of {found['counts']['nodes']:,} nodes flagged)"
    ]
    if found["gpus"]:
        lines.append("")
        lines.append(f"{'state':<8} {'host':<20} {'gpu':>3}  {'rule':<18} {'n':>4}  evidence")
    for entry in found["gpus"][:limit]:
        for rule in entry["rules"]:
            latest = rule["evidence"][0] if rule["evidence"] else {}
            what = latest.get("detail") or latest.get("kind") or ""
            code = f"XID {latest['code']}: " if latest.get("code") is not None else ""
            lines.append(
                f"{rule['state']:<8} {entry['host']:<20} {entry['gpu']:>3}  {rule['rule']:<18} "
                f"{rule['count']:>4}  {code}{what} (last {rule['last']})"
            )
    if len(found["gpus"]) > limit:
        lines.append(f"... and {len(found['gpus']) - limit:,} more GPUs (--format json for all)")
    return "\n".join(lines)
