"""The Slurm jobs of the window as `scontrol show job -d --oneliner` prints them (Slurm 24.05).

One line per Slurm job that ran in the telemetry window: running at its end (as scontrol shows it
then), or finished within it (as the last poll before slurmctld forgot it showed it). The detail
(`-d`) groups give the CPUs, memory and GPU indices (`GRES=gpu:h100:2(IDX:0-1)`) the scheduler
really assigned on each node; hosts in a row with the same allocation share one group. With
`--oneliner` every line break becomes a space and each group keeps its two-space indent, so
groups are set off by three spaces and the line ends in a space, as scontrol's own output is.

Times are UTC without a zone, as the sacct text has them (`sacct.sacct_time`). A running job's
EndTime is when its time limit runs out, which is what slurmctld shows until it ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse.jobs import hostlist
from warehouse.simulate.config import GPUS_PER_HOST
from warehouse.simulate.sacct import sacct_elapsed, sacct_time, sacct_timelimit
from warehouse.simulate.workload import ALL_USERS, TEAMS

if TYPE_CHECKING:
    from warehouse.simulate.cluster import SimulatedCluster

#: scontrol's Reason for a job that ended this way (job_state_reason_string); None otherwise.
END_REASONS = {
    "FAILED": "NonZeroExitCode",
    "TIMEOUT": "TimeLimit",
    "NODE_FAIL": "NodeDown",
    "OUT_OF_MEMORY": "OutOfMemory",
}
_PRIORITY = {"high": 30_000, "normal": 10_000, "low": 1_000}
_UID = {name: 10_001 + i for i, (_, name) in enumerate(ALL_USERS)}
_GID = {team: 20_001 + i for i, team in enumerate(TEAMS)}


def index_ranges(indices: Iterable[int]) -> str:
    """Indices as Slurm prints a bitmap (CPU_IDs, GRES IDX): sorted runs `a-b`, commas between.

    >>> index_ranges([0, 1, 2, 3, 5, 7, 8])
    '0-3,5,7-8'
    >>> index_ranges([4])
    '4'
    """
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def parse_index_ranges(text: str) -> list[int]:
    """The indices `index_ranges` wrote.

    >>> parse_index_ranges("0-3,5,7-8")
    [0, 1, 2, 3, 5, 7, 8]
    """
    out: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def memory_text(mib: int) -> str:
    """A memory size as Slurm prints one in TRES and MinMemoryNode: the largest exact unit.

    >>> memory_text(262144), memory_text(2097152), memory_text(1500)
    ('256G', '2T', '1500M')
    """
    value, units = mib, "MGTP"
    while value and value % 1024 == 0 and len(units) > 1:
        value, units = value // 1024, units[1:]
    return f"{value}{units[0]}"


def node_groups(hosts: list[str], details: list[str]) -> list[tuple[list[str], str]]:
    """Runs of consecutive hosts with the same detail text, as scontrol groups them.

    >>> node_groups(["a1", "a2", "a3"], ["x", "x", "y"])
    [(['a1', 'a2'], 'x'), (['a3'], 'y')]
    """
    groups: list[tuple[list[str], str]] = []
    for host, detail in zip(hosts, details, strict=True):
        if groups and groups[-1][1] == detail:
            groups[-1][0].append(host)
        else:
            groups.append(([host], detail))
    return groups


def write_scontrol(cluster: SimulatedCluster, path: Path) -> int:
    """Write the window's Slurm jobs to `path`; returns the number of lines (jobs)."""
    lines = list(scontrol_lines(cluster))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def scontrol_lines(cluster: SimulatedCluster) -> Iterator[str]:
    """One `scontrol show job -d --oneliner` line per Slurm job that ran in the window."""
    slurm = {
        c["cluster"]
        for c in cluster.clusters.select(["cluster", "scheduler"]).to_pylist()
        if c["scheduler"] == "slurm"
    }
    hosts = {
        n["host"]: n for n in cluster.nodes.select(["host", "cpu_cores", "memory_gb"]).to_pylist()
    }
    window_start = cluster.config.start
    for row, job in enumerate(cluster.jobs.to_pylist()):
        if job["cluster"] not in slurm or job["start_at"] is None:
            continue
        if job["end_at"] is not None and job["end_at"] < window_start:
            continue
        yield _line(job, cluster.gpu_slots[row], hosts)


def _line(job: dict[str, Any], slots: tuple[int, ...], hosts: dict[str, dict[str, Any]]) -> str:
    node_list: list[str] = job["node_list"]
    first = hosts[node_list[0]]
    nodes, gpus, gpu_type = int(job["nodes"]), int(job["gpus"]), job["gpu_type"]
    mib_node = int(first["memory_gb"]) // GPUS_PER_HOST * len(slots) * 1024
    gres = f"gpu:{gpu_type}:" if gpu_type else "gpu:"
    tres = f"cpu={job['cpus']},mem={memory_text(mib_node * nodes)},node={nodes}"
    tres += f",billing={job['cpus']},gres/gpu={gpus}"
    if gpu_type:
        tres += f",gres/gpu:{gpu_type}={gpus}"
    per_core = int(first["cpu_cores"]) // GPUS_PER_HOST
    cpu_ids = index_ranges(c for s in slots for c in range(s * per_core, (s + 1) * per_core))
    # The schedule gives every host of a job the same slots (one host, or whole nodes).
    detail = f"CPU_IDs={cpu_ids} Mem={mib_node} GRES={gres}{len(slots)}(IDX:{index_ranges(slots)})"
    groups = [
        f"  Nodes={hostlist.compress(group)} {text}"
        for group, text in node_groups(node_list, [detail] * len(node_list))
    ]
    head = [*_head(job), f"ReqTRES={tres}", f"AllocTRES={tres}", "Socks/Node=*"]
    head += [f"NtasksPerN:B:S:C={int(nodes > 1)}:0:*:*", "CoreSpec=*", f"JOB_GRES={gres}{gpus}"]
    return " ".join([*head, *groups, *_tail(job, mib_node, f"{gres}{len(slots)}")]) + " "


def _head(job: dict[str, Any]) -> list[str]:
    """The fields before the TRES: who, state, times, where."""
    user, account, job_id, state = job["user"], job["account"], job["job_id"], job["state"]
    limit = job["time_limit_s"]
    start = job["start_at"]
    # A running job's EndTime is when its time limit runs out.
    end = start + timedelta(seconds=limit) if job["end_at"] is None and limit else job["end_at"]
    nodes, cpus = int(job["nodes"]), int(job["cpus"])
    return [
        f"JobId={job_id}", f"JobName={job['job_name']}",
        f"UserId={user}({_UID.get(user, 65534)})", f"GroupId={account}({_GID.get(account, 65534)})",
        "MCS_label=N/A", f"Priority={_PRIORITY.get(job['qos'], 1) + int(job_id) % 997}",
        "Nice=0", f"Account={account}", f"QOS={job['qos']}",
        f"JobState={state}", f"Reason={END_REASONS.get(state, 'None')}", "Dependency=(null)",
        "Requeue=1", "Restarts=0", "BatchFlag=1", "Reboot=0", f"ExitCode={job['exit_code']}",
        f"DerivedExitCode={job['derived_exit_code']}",
        f"RunTime={sacct_elapsed(job['elapsed_s'])}", f"TimeLimit={sacct_timelimit(limit)}",
        "TimeMin=N/A", f"SubmitTime={sacct_time(job['submit_at'])}",
        f"EligibleTime={sacct_time(job['eligible_at'])}",
        f"AccrueTime={sacct_time(job['eligible_at'])}",
        f"StartTime={sacct_time(start)}", f"EndTime={sacct_time(end)}",
        "Deadline=N/A", "SuspendTime=None", "SecsPreSuspend=0",
        f"LastSchedEval={sacct_time(start)}", "Scheduler=Main",
        f"Partition={job['partition']}", f"AllocNode:Sid=login01:{20_000 + int(job_id) % 40_000}",
        "ReqNodeList=(null)", "ExcNodeList=(null)",
        f"NodeList={hostlist.compress(job['node_list'])}", f"BatchHost={job['node_list'][0]}",
        f"NumNodes={nodes}", f"NumCPUs={cpus}", f"NumTasks={nodes}", f"CPUs/Task={cpus // nodes}",
        "ReqB:S:C:T=0:0:*:*",
    ]  # fmt: skip


def _tail(job: dict[str, Any], mib_node: int, gres_node: str) -> list[str]:
    """The fields after the node groups: per-node minimums, sharing, files."""
    user, job_id = job["user"], job["job_id"]
    return [
        f"MinCPUsNode={int(job['cpus']) // int(job['nodes'])}",
        f"MinMemoryNode={memory_text(mib_node)}", "MinTmpDiskNode=0",
        "Features=(null)", "DelayBoot=00:00:00",
        f"OverSubscribe={'NO' if job['exclusive'] else 'OK'}", "Contiguous=0",
        "Licenses=(null)", "Network=(null)",
        f"Command=/home/{user}/jobs/{job['job_name']}.sbatch", f"WorkDir=/home/{user}",
        f"StdErr=/home/{user}/slurm-{job_id}.out", "StdIn=/dev/null",
        f"StdOut=/home/{user}/slurm-{job_id}.out", "Power=",
        f"TresPerNode=gres/{gres_node}",
    ]  # fmt: skip
