"""One job's GPU efficiency report (`wanka jobstats`, `GET /v1/jobs/{job_id}/stats`).

Like Princeton's Jobstats: the job's facts from the job log, what each GPU it held did (from
the shipped dynamic tables job_gpu_usage and job_gpu_usage_by_gpu, so the report reads a few
rows however long the job ran), and notes from the rules in wanka.efficiency_rules, whose
thresholds an admin edits. `stats` returns plain JSON-ready data; `render` the text report.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb

from warehouse.errors import UserError

#: GPUs at least this large (GB) count as "big" for the oversized_gpu rule.
BIG_GPU_GB = 40


class UnknownJob(UserError, LookupError):
    """No job log row, attribution or telemetry names this job (exit status 2, HTTP 404)."""


_FACTS = """
SELECT j.job_id, j.job_name, j.user, j.account, j.partition, j.qos, j.cluster, j.state,
       j.submit_at, j.start_at, j.end_at,
       coalesce(j.elapsed_s, CASE WHEN j.start_at IS NOT NULL AND j.end_at IS NULL
                                  THEN epoch(now() - j.start_at) END) AS elapsed_s,
       j.time_limit_s, j.gpus, j.gpu_type, j.nodes, j.node_list, j.exclusive,
       j.gpu_util_ave, j.gpu_util_max, j.gpu_mem_ave_mib, j.gpu_mem_max_mib
FROM jobs j WHERE j.job_id = ?
"""

#: A Kubernetes pod, named 'namespace/pod' as job_gpus names it, in the job's terms.
_POD = """
SELECT p.namespace || '/' || p.name AS job_id, p.name AS job_name, p.namespace AS account,
       p.cluster, p.pod_phase AS state, p.created_at AS submit_at, p.scheduled_at AS start_at,
       p.deleted_at AS end_at,
       epoch(coalesce(p.deleted_at, now()) - p.scheduled_at) AS elapsed_s,
       p.num_gpu AS gpus, 1 AS nodes, [p.node] AS node_list
FROM pods p WHERE p.namespace || '/' || p.name = ?
"""

_USAGE = "SELECT * EXCLUDE (job_id) FROM job_gpu_usage WHERE job_id = ?"

_GPUS = """
SELECT u.host, u.gpu, u.gpu_instance, u.uuid, n.gpu_model, g.hbm_gb * 1024 AS memory_mib,
       u.samples, u.gpu_seconds, u.util_pct, u.idle_gpu_seconds, u.sm_active,
       u.fb_used_max_mib, u.power_w, u.energy_kwh, u.first_ts, u.last_ts
FROM job_gpu_usage_by_gpu u
LEFT JOIN nodes n ON n.host = u.host
LEFT JOIN gpu_models g ON g.model = n.gpu_model
WHERE u.job_id = ? ORDER BY u.host, u.gpu, u.gpu_instance
"""

_SOURCES = """
SELECT source, count(*) AS rows, bool_and(exact) AS exact
FROM job_gpus WHERE job_id = ? GROUP BY source ORDER BY source
"""


def _rows(cur: duckdb.DuckDBPyConnection, sql: str, job_id: str) -> list[dict[str, Any]]:
    result = cur.execute(sql, [job_id])
    names = [d[0] for d in result.description or []]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


#: The shipped tables the report reads, in the order they refresh (each reads the one before):
#: a face brings them up to the telemetry first (`warehouse.dynamic.refresh.catch_up`).
TABLES = ("job_gpu_usage_daily", "job_gpu_usage_by_gpu", "job_gpu_usage")


def _missing_tables(cur: duckdb.DuckDBPyConnection) -> list[str]:
    found = {
        r[0]
        for r in cur.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
            "AND database_name = current_database()"
        ).fetchall()
    }
    return [t for t in ("job_gpu_usage", "job_gpu_usage_by_gpu") if t not in found]


def rules(cur: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """wanka.efficiency_rules by rule name."""
    found = _rows(cur, "SELECT * FROM wanka.efficiency_rules WHERE ? IS NOT NULL", "all")
    return {r["rule"]: r for r in found}


def stats(cur: duckdb.DuckDBPyConnection, job_id: str) -> dict[str, Any]:
    """The report's data for `job_id`; UnknownJob when wanka has never seen it."""
    missing = _missing_tables(cur)
    if missing:
        raise UserError(
            f"{' and '.join(missing)} missing: the report reads these shipped dynamic tables; "
            "create them again with the CREATE DYNAMIC TABLE statements of wanka's sql/dynamic/"
        )
    facts = _rows(cur, _FACTS, job_id) or _rows(cur, _POD, job_id)
    usage = _rows(cur, _USAGE, job_id)
    sources = _rows(cur, _SOURCES, job_id)
    if not (facts or usage or sources):
        raise UnknownJob(f"no job {job_id!r}: not in jobs, job_gpus or the GPU telemetry")
    gpus = _rows(cur, _GPUS, job_id)
    job = facts[0] if facts else {"job_id": job_id}
    summary = usage[0] if usage else None
    report = {
        "job": job,
        "usage": summary,
        "gpus": gpus,
        "sources": sources,
        "notes": notes(job, summary, gpus, sources, rules(cur)),
    }
    plain: dict[str, Any] = _plain(report)
    return plain


Note = dict[str, str]


def notes(
    job: dict[str, Any],
    usage: dict[str, Any] | None,
    gpus: list[dict[str, Any]],
    sources: list[dict[str, Any]],
    rule: dict[str, dict[str, Any]],
) -> list[Note]:
    """The efficiency notes the rules give: [{"rule": ..., "note": ...}]. A rule speaks only of
    a job that ran at least its min_elapsed_s."""
    said: list[Note] = []
    if any(not s["exact"] for s in sources):
        said.append(_note("attribution", _SHARED))
    if usage is None:
        return said or [_note("attribution", "no GPU telemetry is attributed to this job")]
    elapsed = float(job.get("elapsed_s") or usage.get("gpu_seconds") or 0)
    active = {name: r for name, r in rule.items() if elapsed >= r["min_elapsed_s"]}
    for check in (_idle, _low_util, _memory, _time_limit):
        said.extend(check(job, usage, gpus, active))
    return said


_SHARED = (
    "the job shares nodes and no source says which GPUs it held: its GPU figures are unknown "
    "(job_gpus rows marked ambiguous)"
)
Rules = dict[str, dict[str, Any]]


def _note(rule: str, text: str) -> Note:
    return {"rule": rule, "note": text}


def _idle(
    job: dict[str, Any], usage: dict[str, Any], gpus: list[dict[str, Any]], rule: Rules
) -> list[Note]:
    if "idle_gpu" not in rule:
        return []
    limit = rule["idle_gpu"]["threshold"]
    idle = [g for g in gpus if g["util_pct"] is not None and g["util_pct"] < limit]
    if not idle:
        return []
    where = ", ".join(_gpu_name(g) for g in idle[:8]) + (" …" if len(idle) > 8 else "")
    return [_note("idle_gpu", f"did not use {len(idle)} of {len(gpus)} GPUs ({where})")]


def _low_util(
    job: dict[str, Any], usage: dict[str, Any], gpus: list[dict[str, Any]], rule: Rules
) -> list[Note]:
    util = usage["util_pct"]
    if "low_util" not in rule or util is None or util >= rule["low_util"]["threshold"]:
        return []
    return [
        _note(
            "low_util",
            f"mean GPU utilisation is {util:.1f} %, below {rule['low_util']['threshold']:g} %: "
            "fewer GPUs, or a fix of the input pipeline",
        )
    ]


def _memory(
    job: dict[str, Any], usage: dict[str, Any], gpus: list[dict[str, Any]], rule: Rules
) -> list[Note]:
    memory = [g["memory_mib"] for g in gpus if g["memory_mib"]]
    used = usage.get("fb_used_max_mib")
    if not memory or used is None:
        return []
    total = max(memory)
    share = 100 * used / total
    said = []
    if "low_gpu_memory" in rule and share < rule["low_gpu_memory"]["threshold"]:
        said.append(
            _note(
                "low_gpu_memory",
                f"used at most {used / 1024:.1f} GiB of {total / 1024:.0f} GiB GPU memory "
                f"({share:.0f} %, below {rule['low_gpu_memory']['threshold']:g} %)",
            )
        )
    big = total / 1024 >= BIG_GPU_GB
    if big and "oversized_gpu" in rule and share < rule["oversized_gpu"]["threshold"]:
        said.append(
            _note(
                "oversized_gpu",
                f"a {total / 1024:.0f} GiB GPU for at most {used / 1024:.1f} GiB: a smaller "
                "GPU or a MIG slice would do",
            )
        )
    return said


def _time_limit(
    job: dict[str, Any], usage: dict[str, Any], gpus: list[dict[str, Any]], rule: Rules
) -> list[Note]:
    limit, elapsed = job.get("time_limit_s"), job.get("elapsed_s")
    finished = job.get("end_at") is not None and job.get("state") not in (None, "RUNNING")
    if "time_limit" not in rule or not (limit and elapsed and finished):
        return []
    if limit / elapsed <= rule["time_limit"]["threshold"]:
        return []
    return [
        _note(
            "time_limit",
            f"asked for {_clock(limit)} and ran {_clock(elapsed)} ({limit / elapsed:.0f}× too "
            "long): a time limit closer to the run time starts sooner (backfill)",
        )
    ]


def _gpu_name(gpu: dict[str, Any]) -> str:
    where = f"{gpu['host']} GPU {gpu['gpu']}"
    return f"{where}.{gpu['gpu_instance']}" if gpu.get("gpu_instance") else where


def _clock(seconds: float) -> str:
    """Slurm's D-HH:MM:SS.

    >>> _clock(3725), _clock(90061)
    ('01:02:05', '1-01:01:01')
    """
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _plain(value: Any) -> Any:
    """JSON-ready: timestamps as ISO text in UTC, lists and dicts walked."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def render(report: dict[str, Any]) -> str:
    """The Jobstats-like text report."""
    job, usage, gpus = report["job"], report["usage"], report["gpus"]
    bar = "=" * 72
    lines = [bar, f"{'GPU job statistics':^72}", bar]

    def fact(label: str, value: object) -> None:
        if value not in (None, ""):
            lines.append(f"{label:>16}: {value}")

    fact("Job ID", job["job_id"])
    fact("Name", job.get("job_name"))
    user = "/".join(str(v) for v in (job.get("user"), job.get("account")) if v)
    fact("User/Account", user)
    fact("Partition", job.get("partition"))
    fact("Cluster", job.get("cluster"))
    fact("State", job.get("state"))
    nodes = job.get("node_list") or []
    if nodes:
        shown = ", ".join(nodes[:6]) + (" …" if len(nodes) > 6 else "")
        fact("Nodes", f"{len(nodes)} ({shown})")
    if job.get("gpus") is not None:
        fact("GPUs", f"{job['gpus']}" + (f" ({job['gpu_type']})" if job.get("gpu_type") else ""))
    elapsed, limit = job.get("elapsed_s"), job.get("time_limit_s")
    if elapsed is not None:
        of = f" of {_clock(limit)} limit ({100 * elapsed / limit:.1f} %)" if limit else ""
        fact("Elapsed", _clock(elapsed) + of)
    sources = ", ".join(s["source"] for s in report["sources"])
    fact("Attributed by", sources or None)
    if usage:
        fact("GPUs seen", usage["gpus_seen"])
        fact("GPU-hours", f"{usage['gpu_seconds'] / 3600:,.2f}")
        fact("GPU util", _pct(usage["util_pct"]) + f" mean, {_pct(usage['util_p50'])} median GPU")
        fact("Idle GPU-hours", f"{(usage['idle_gpu_seconds'] or 0) / 3600:,.2f}")
        if usage.get("energy_kwh") is not None:
            fact("GPU energy", f"{usage['energy_kwh']:,.2f} kWh")
    if gpus:
        lines += ["", f"{'per GPU':^72}", ""]
        lines.append(f"  {'GPU':<22}{'util %':>8}{'SM %':>7}{'memory GiB':>16}{'power W':>9}")
        for g in gpus:
            mem = "–" if g["fb_used_max_mib"] is None else f"{g['fb_used_max_mib'] / 1024:.1f}"
            if g["memory_mib"]:
                mem += f" / {g['memory_mib'] / 1024:.0f}"
            lines.append(
                f"  {_gpu_name(g):<22}{_num(g['util_pct']):>8}{_num(g['sm_active']):>7}"
                f"{mem:>16}{_num(g['power_w'], 0):>9}"
            )
    lines += ["", f"{'notes':^72}", ""]
    lines += [f"  * {n['note']}" for n in report["notes"]] or ["  (none)"]
    lines.append(bar)
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} %"


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"
