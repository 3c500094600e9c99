"""The Slurm jobs as `sacct --parsable2` prints them: a header line, then each job and its steps.

    sacct --parsable2 --format=JobID,JobIDRaw,JobName,User,Account,Partition,QOS,Submit,
        Eligible,Start,End,Elapsed,State,ExitCode,DerivedExitCode,AllocNodes,AllocCPUS,
        AllocTRES,ReqTRES,NodeList,Timelimit

Times are UTC without a zone (sacct prints the cluster's local time; the simulated clusters run
on UTC), 'Unknown' where there is none; Elapsed and Timelimit are [D-]HH:MM:SS (a job without a
limit says UNLIMITED, a step nothing); NodeList is a host list.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from warehouse.jobs import hostlist

FIELDS = (
    "JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "QOS", "Submit",
    "Eligible", "Start", "End", "Elapsed", "State", "ExitCode", "DerivedExitCode",
    "AllocNodes", "AllocCPUS", "AllocTRES", "ReqTRES", "NodeList", "Timelimit",
)  # fmt: skip


def sacct_time(value: datetime | None) -> str:
    """sacct's time format.

    >>> sacct_time(datetime(2026, 11, 1, 10, tzinfo=UTC))
    '2026-11-01T10:00:00'
    >>> sacct_time(None)
    'Unknown'
    """
    return "Unknown" if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def sacct_elapsed(seconds: float | None) -> str:
    """[D-]HH:MM:SS, as sacct prints Elapsed.

    >>> sacct_elapsed(3725), sacct_elapsed(90061)
    ('01:02:05', '1-01:01:01')
    """
    total = 0 if seconds is None or math.isnan(seconds) else int(seconds)
    days, rest = divmod(total, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def sacct_timelimit(seconds: float | None) -> str:
    """Timelimit as sacct (and scontrol's TimeLimit) print it: whole minutes as [D-]HH:MM:SS.

    >>> sacct_timelimit(86400), sacct_timelimit(1800), sacct_timelimit(None)
    ('1-00:00:00', '00:30:00', 'UNLIMITED')
    """
    if seconds is None or math.isnan(seconds):
        return "UNLIMITED"
    return sacct_elapsed(seconds // 60 * 60)


def tres(cpus: int, gpus: int, gpu_type: str | None, mem_gb: int, nodes: int, billing: bool) -> str:
    """AllocTRES text, keys in sacct's order.

    >>> tres(64, 8, "h100", 512, 1, True)
    'billing=64,cpu=64,gres/gpu:h100=8,mem=512G,node=1'
    """
    gres = f"gres/gpu:{gpu_type}={gpus}" if gpu_type else f"gres/gpu={gpus}"
    head = f"billing={cpus}," if billing else ""
    return f"{head}cpu={cpus},{gres},mem={mem_gb}G,node={nodes}"


def write_sacct(
    jobs: pa.Table, steps: pa.Table, nodes: pa.Table, clusters: pa.Table, path: Path
) -> int:
    """Write the Slurm clusters' jobs (pods are not Slurm's); returns the number of jobs."""
    memory = dict(zip(nodes["host"].to_pylist(), nodes["memory_gb"].to_pylist(), strict=True))
    slurm = {
        c["cluster"]
        for c in clusters.select(["cluster", "scheduler"]).to_pylist()
        if c["scheduler"] == "slurm"
    }
    by_job: dict[str, list[dict[str, Any]]] = {}
    for step in steps.to_pylist():
        by_job.setdefault(str(step["job_id"]), []).append(step)
    lines = ["|".join(FIELDS)]
    count = 0
    for job in jobs.to_pylist():
        if job["cluster"] not in slurm:
            continue
        count += 1
        hosts = job["node_list"] or []
        mem_per_gpu = memory[hosts[0]] / 8 if hosts else 0
        requested = tres(
            job["cpus"],
            job["gpus"],
            job["gpu_type"],
            int(mem_per_gpu * job["gpus"]) if hosts else 0,
            job["nodes"],
            True,
        )
        state = job["state"] + (f" {job['state_reason']}" if job["state_reason"] else "")
        allocated = bool(hosts)
        node_text = hostlist.compress(hosts) if allocated else hostlist.NONE_ASSIGNED
        lines.append("|".join((
            job["job_id"], job["job_id"], job["job_name"], job["user"], job["account"],
            job["partition"], job["qos"], sacct_time(job["submit_at"]),
            sacct_time(job["eligible_at"]), sacct_time(job["start_at"]),
            sacct_time(job["end_at"]), sacct_elapsed(job["elapsed_s"]), state,
            job["exit_code"], job["derived_exit_code"],
            str(job["nodes"] if allocated else 0), str(job["cpus"] if allocated else 0),
            tres(job["cpus"], job["gpus"], job["gpu_type"], int(mem_per_gpu * job["gpus"]),
                 job["nodes"], True) if allocated else "",
            requested, node_text, sacct_timelimit(job["time_limit_s"]),
        )))  # fmt: skip
        for step in by_job.get(job["job_id"], []):
            step_hosts = step["node_list"] or []
            step_id = f"{job['job_id']}.{step['step_id']}"
            lines.append("|".join((
                step_id, step_id, str(step["step_name"]), "", job["account"], "", "",
                sacct_time(step["start_at"]), sacct_time(step["start_at"]),
                sacct_time(step["start_at"]), sacct_time(step["end_at"]),
                sacct_elapsed(step["elapsed_s"]), str(step["state"]), str(step["exit_code"]),
                "", str(step["nodes"]), str(step["cpus"]),
                tres(step["cpus"], step["gpus"], job["gpu_type"],
                     int(mem_per_gpu * step["gpus"]), step["nodes"], False), "",
                node_text if step_hosts == hosts else hostlist.compress(step_hosts), "",
            )))  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return count
