"""Which sacct fields a file holds, and in what order: from its header line, from `--columns`,
or the layout of the real dump in the shared data (`sacct-output-v2.txt`).

`sacct --parsable2` separates fields with `|`; `--parsable` also ends each line with one. A
header, when sacct printed one (no `--noheader`), is the field names themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from warehouse.errors import UserError

#: `sacct --helpformat` (Slurm 17 to 24), plus AllocGRES/ReqGRES of older releases.
_HELPFORMAT = (
    "Account", "AdminComment", "AllocCPUS", "AllocGRES", "AllocNodes", "AllocTRES", "AssocID",
    "AveCPU", "AveCPUFreq", "AveDiskRead", "AveDiskWrite", "AvePages", "AveRSS", "AveVMSize",
    "BlockID", "Cluster", "Comment", "Constraints", "ConsumedEnergy", "ConsumedEnergyRaw",
    "Container", "CPUTime", "CPUTimeRAW", "DBIndex", "DerivedExitCode", "Elapsed", "ElapsedRaw",
    "Eligible", "End", "ExitCode", "Extra", "FailedNode", "Flags", "GID", "Group", "JobID",
    "JobIDRaw", "JobName", "Layout", "Licenses", "MaxDiskRead", "MaxDiskReadNode",
    "MaxDiskReadTask", "MaxDiskWrite", "MaxDiskWriteNode", "MaxDiskWriteTask", "MaxPages",
    "MaxPagesNode", "MaxPagesTask", "MaxRSS", "MaxRSSNode", "MaxRSSTask", "MaxVMSize",
    "MaxVMSizeNode", "MaxVMSizeTask", "McsLabel", "MinCPU", "MinCPUNode", "MinCPUTask", "NCPUS",
    "NNodes", "NodeList", "NTasks", "Partition", "Planned", "PlannedCPU", "PlannedCPURAW",
    "Priority", "QOS", "QOSRAW", "Reason", "ReqCPUFreq", "ReqCPUFreqGov", "ReqCPUFreqMax",
    "ReqCPUFreqMin", "ReqCPUS", "ReqGRES", "ReqMem", "ReqNodes", "ReqTRES", "Reservation",
    "ReservationId", "Reserved", "ResvCPU", "ResvCPURAW", "Start", "State", "StdErr", "StdIn",
    "StdOut", "Submit", "SubmitLine", "Suspended", "SystemComment", "SystemCPU", "Timelimit",
    "TimelimitRaw", "TotalCPU", "TRESUsageInAve", "TRESUsageInMax", "TRESUsageInMaxNode",
    "TRESUsageInMaxTask", "TRESUsageInMin", "TRESUsageInMinNode", "TRESUsageInMinTask",
    "TRESUsageInTot", "TRESUsageOutAve", "TRESUsageOutMax", "TRESUsageOutMaxNode",
    "TRESUsageOutMaxTask", "TRESUsageOutMin", "TRESUsageOutMinNode", "TRESUsageOutMinTask",
    "TRESUsageOutTot", "UID", "User", "UserCPU", "WCKey", "WCKeyID", "WorkDir",
)  # fmt: skip
KNOWN_FIELDS = frozenset(name.lower() for name in _HELPFORMAT)

#: The fields of `sacct-output-v2.txt` (aws-samples/hpc-cost-simulator): 25 on most lines, 26
#: where sacct also printed Partition. The default for output without a header.
DEFAULT_COLUMNS = (
    "State", "JobID", "ReqCPUS", "ReqMem", "ReqNodes", "Constraints", "Submit", "Eligible",
    "Start", "Elapsed", "Suspended", "End", "ExitCode", "DerivedExitCode", "AllocNodes", "NCPUS",
    "MaxDiskRead", "MaxDiskWrite", "MaxPages", "MaxRSS", "MaxVMSize", "CPUTime", "UserCPU",
    "SystemCPU", "TotalCPU", "Partition",
)  # fmt: skip

#: What the reader uses, by role: the first field of each tuple that the file holds.
ROLES: dict[str, tuple[str, ...]] = {
    "job_id": ("JobID", "JobIDRaw"),
    "name": ("JobName",),
    "user": ("User",),
    "account": ("Account",),
    "partition": ("Partition",),
    "qos": ("QOS",),
    "cluster": ("Cluster",),
    "submit": ("Submit",),
    "eligible": ("Eligible",),
    "start": ("Start",),
    "end": ("End",),
    "elapsed": ("Elapsed",),
    "elapsed_raw": ("ElapsedRaw",),
    "state": ("State",),
    "exit_code": ("ExitCode",),
    "derived_exit_code": ("DerivedExitCode",),
    "nodes": ("AllocNodes", "NNodes"),
    "cpus": ("AllocCPUS", "NCPUS"),
    "alloc_tres": ("AllocTRES",),
    "req_tres": ("ReqTRES",),
    "alloc_gres": ("AllocGRES",),
    "req_gres": ("ReqGRES",),
    "node_list": ("NodeList",),
    "max_rss": ("MaxRSS",),
    "total_cpu": ("TotalCPU",),
    "time_limit": ("Timelimit", "TimelimitRaw"),  # TimelimitRaw: whole minutes
    "usage_ave": ("TRESUsageInAve",),
    "usage_max": ("TRESUsageInMax",),
}


@dataclass(frozen=True)
class Layout:
    """The fields of each line.

    Attributes:
        names: sacct field names in line order.
        min_fields: fewest fields a line may have (the trailing ones missing are NULL).
        header: the header line as written, when the file has one; skipped where it repeats.
    """

    names: tuple[str, ...]
    min_fields: int
    header: str | None = None

    def index(self) -> dict[str, int]:
        """Role -> position of the field that fills it, for the roles this layout can fill."""
        position = {name.lower(): i for i, name in reversed(list(enumerate(self.names)))}
        found: dict[str, int] = {}
        for role, candidates in ROLES.items():
            for name in candidates:
                if name.lower() in position:
                    found[role] = position[name.lower()]
                    break
        return found

    @property
    def expected(self) -> str:
        """The field count a line should have, in words."""
        n = len(self.names)
        return str(n) if self.min_fields == n else f"{self.min_fields} to {n}"


def header_names(line: str) -> tuple[str, ...] | None:
    """The field names if `line` is a sacct header line, else None.

    A header is every field a sacct field name (JobID among them), or, for fields newer than
    this list, JobID plus a majority of known names.

    >>> header_names("JobID|State|AllocTRES|")
    ('JobID', 'State', 'AllocTRES')
    >>> header_names("123|COMPLETED|cpu=1") is None
    True
    """
    names = tuple(f.strip() for f in line.removesuffix("|").split("|"))
    lowered = [n.lower() for n in names]
    if "jobid" not in lowered and "jobidraw" not in lowered:
        return None
    known = sum(n in KNOWN_FIELDS for n in lowered)
    return names if known * 2 > len(names) else None


def from_header(line: str) -> Layout | None:
    """The layout a header line states, or None when `line` is data."""
    names = header_names(line)
    return None if names is None else Layout(names, len(names), line)


def from_options(columns: tuple[str, ...] | None) -> Layout:
    """The layout of output without a header: `--columns`, else the v2 dump's 25 or 26 fields.

    Raises:
        UserError: for a name sacct does not know, or columns without JobID.
    """
    if not columns:
        return Layout(DEFAULT_COLUMNS, len(DEFAULT_COLUMNS) - 1)
    names = tuple(c.strip() for c in columns)
    unknown = [n for n in names if n.lower() not in KNOWN_FIELDS]
    if unknown:
        raise UserError(
            f"sacct: unknown field {unknown[0]!r} in --columns (the names `sacct --helpformat` "
            "prints, e.g. JobID,State,Start,End,AllocTRES,NodeList)"
        )
    if not {"jobid", "jobidraw"} & {n.lower() for n in names}:
        raise UserError("sacct: --columns must include JobID, which tells jobs from steps")
    return Layout(names, len(names))
