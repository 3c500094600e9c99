"""How `scontrol show job -d` writes a job, and how to read its parts back: the `Key=value`
fields, the job id as sacct names it, the GPU indices of a detail group's GRES.

Pure text functions, no polars: the reader (`scontrol.py`) runs them once per job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from warehouse.jobs.hostlist import split_outside

#: A field starts where a key (`JobId`, `AllocNode:Sid`, `CPUs/Task`, `CPU_IDs`) and `=` follow
#: white space. Values may hold spaces (JobName, Command, SubmitLine), so a value runs to the next
#: key, and a word like `--export=ALL` inside one is not a key.
_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_:/]*)=")
#: Keys of a detail group (`-d`), repeated once per group of hosts with the same allocation;
#: GRES_IDX is what Slurm 17.02 to 18.08 called GRES.
GROUP_KEYS = ("Nodes", "CPU_IDs", "Mem", "GRES", "GRES_IDX")
#: What scontrol prints for a text field that has no value.
NOTHING = ("", "(null)", "N/A", "None")
#: A MIG slice's GRES type (`1g.10gb`, `nvidia_a100_3g.40gb`): its IDX counts MIG devices, not
#: GPUs, so it says nothing about which GPU index the job held.
_MIG_TYPE = re.compile(r"[0-9]+g\.[0-9]+gb")
#: More GPU indices than any node has (8 GPUs × 7 MIG slices is 56): a damaged line, not a job.
MAX_INDEX = 1023
#: The most a count (nodes, CPUs, GPUs of a job) can be and still fit the tables' INTEGER.
MAX_COUNT = 999_999_999


@dataclass
class Job:
    """One job's fields: the first value of each key, and its detail groups in order."""

    fields: dict[str, str]
    groups: list[dict[str, str]]

    def text(self, key: str) -> str | None:
        """The field's value, or None where it is absent or says "nothing"."""
        value = self.fields.get(key)
        return None if value is None or value in NOTHING else value


def parse_fields(text: str) -> Job:
    """The `Key=value` fields of one job, `--oneliner` or the indented lines joined.

    >>> job = parse_fields("JobId=7 JobName=my run UserId=al(1) Nodes=g1 GRES=gpu:1(IDX:0) ")
    >>> job.fields
    {'JobId': '7', 'JobName': 'my run', 'UserId': 'al(1)'}
    >>> job.groups
    [{'Nodes': 'g1', 'GRES': 'gpu:1(IDX:0)'}]
    """
    starts = list(_KEY.finditer(text))
    fields: dict[str, str] = {}
    groups: list[dict[str, str]] = []
    ends = [after.start() for after in starts[1:]] + [len(text)] * bool(starts)
    for here, end in zip(starts, ends, strict=True):
        key = here.group(1)
        value = text[here.end() : end].strip()
        if key == "Nodes":
            groups.append({})
        if key in GROUP_KEYS and groups:
            groups[-1].setdefault(key, value)
        else:
            fields.setdefault(key, value)  # the first wins: later ones are inside free text
    return Job(fields, groups)


def job_id(job: Job) -> str | None:
    """The job's id as sacct writes it: `123`, array task `123_4`, pending tasks `123_[5-9%2]`,
    het component `125+1`; None without a JobId.

    >>> job_id(parse_fields("JobId=124 ArrayJobId=123 ArrayTaskId=4 JobName=a"))
    '123_4'
    >>> job_id(parse_fields("JobId=123 ArrayJobId=123 ArrayTaskId=5-9%2 ArrayTaskThrottle=2"))
    '123_[5-9%2]'
    >>> job_id(parse_fields("JobId=126 HetJobId=125 HetJobOffset=1 JobName=b"))
    '125+1'
    """
    own = job.fields.get("JobId", "")
    array, task = job.fields.get("ArrayJobId"), job.fields.get("ArrayTaskId")
    het, offset = job.fields.get("HetJobId"), job.fields.get("HetJobOffset")
    if not _digits(own):
        return None
    if array and task:
        return f"{array}_{task}" if _digits(task) else f"{array}_[{task}]"
    if het and offset:
        return f"{het}+{offset}"
    return own


def user_name(text: str | None) -> str | None:
    """`alice(1001)` → `alice`.

    >>> user_name("alice(1001)"), user_name("1001(1001)"), user_name(None)
    ('alice', '1001', None)
    """
    return None if text is None else text.partition("(")[0] or None


def leading_count(text: str | None) -> int | None:
    """NumNodes / NumCPUs: `64`, or the least of a pending job's range `1-4` or sizes `2,4`.

    Raises:
        ValueError: for text that starts with no number.

    >>> leading_count("64"), leading_count("1-4"), leading_count(None)
    (64, 1, None)
    """
    if text is None:
        return None
    found = re.match(r"[0-9]{1,9}(?![0-9])", text)
    if found is None:
        raise ValueError(f"not a count: {text!r}")
    return int(found.group())


def exclusive(oversubscribe: str | None, exclusive_field: str | None) -> bool | None:
    """Whether the job holds its nodes whole.

    Slurm 26.05 prints `Exclusive=NO|NODE|USER|MCS|TOPO` beside OverSubscribe, and only NODE is
    whole nodes; before it `OverSubscribe=NO` was `--exclusive` (OK, YES, USER, MCS: shared).

    >>> exclusive("NO", None), exclusive("OK", None), exclusive("NO", "NO"), exclusive("NO", "NODE")
    (True, False, False, True)
    >>> exclusive(None, None) is None
    True
    """
    if exclusive_field is not None:
        return exclusive_field.upper() == "NODE"
    if oversubscribe is None:
        return None
    return oversubscribe.upper() == "NO"


def indices(text: str) -> list[int]:
    """The indices of a Slurm bitmap (`0-3,6-7`); `N/A` or nothing is none.

    Raises:
        ValueError: on anything but ascending numbers and ranges.

    >>> indices("0-3,6-7"), indices("1,3"), indices("N/A")
    ([0, 1, 2, 3, 6, 7], [1, 3], [])
    """
    if text in ("", "N/A"):
        return []
    found: list[int] = []
    for part in text.split(","):
        low, dash, high = part.partition("-")
        if not _digits(low) or (dash and not _digits(high)):
            raise ValueError(f"index list {text!r}: {part!r} is not a number or a range a-b")
        first, last = int(low), int(high) if dash else int(low)
        if last < first or (found and first <= found[-1]):
            raise ValueError(f"index list {text!r}: {part!r} is out of order")
        if last > MAX_INDEX:
            raise ValueError(f"index list {text!r}: {last} is more GPUs than a node has")
        found.extend(range(first, last + 1))
    return found


def index_text(values: Iterable[int]) -> str:
    """Indices as Slurm prints a bitmap: ascending runs `a-b`, commas between.

    >>> index_text([0, 1, 2, 3, 6, 7]), index_text([1, 3]), index_text([])
    ('0-3,6-7', '1,3', '')
    """
    runs: list[list[int]] = []
    for i in sorted(set(values)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def gpu_indices(gres: str | None) -> list[int]:
    """The GPU indices a detail group's GRES names: `gpu:h100:8(IDX:0-7)` (Slurm >= 20.11),
    `gpu:tesla(IDX:0-1)` (17.02 to 20.02), among other GRES (`gpu:a100:4(IDX:0-3),nvme:1`).
    A count without indices (`gpu:2(CNT:2)`, `gpu:2`) and MIG slices give none.

    Raises:
        ValueError: on unbalanced parentheses, a GPU count that is not a number, a GPU detail
            that is neither IDX nor CNT, or a malformed index list.

    >>> gpu_indices("gpu:h100:2(IDX:1,3)"), gpu_indices("gpu(IDX:0)")
    ([1, 3], [0])
    >>> gpu_indices("gpu:a100:4(IDX:0-3),nvme:1"), gpu_indices("gpu:(null):2(IDX:4-5)")
    ([0, 1, 2, 3], [4, 5])
    >>> gpu_indices("gpu:2(CNT:2)"), gpu_indices(""), gpu_indices("gpu:1g.10gb:1(IDX:3)")
    ([], [], [])
    """
    found: list[int] = []
    for entry in _entries((gres or "").replace("(null)", "")):
        head, _, detail = entry.partition("(")
        parts = head.split(":")
        if parts[0] != "gpu":
            continue
        if detail and not detail.endswith(")"):
            raise ValueError(f"{entry!r}: unbalanced parentheses")
        count = parts[2] if len(parts) > 2 else parts[1] if len(parts) == 2 else ""
        kind = parts[1] if len(parts) > 2 else ""
        if len(parts) == 2 and not _digits(count):
            count, kind = "", count  # 17.02 to 20.02: gpu:TYPE(IDX:...)
        if count and not _digits(count):
            raise ValueError(f"{entry!r}: GPU count {count!r} is not a whole number")
        what, _, listed = detail.removesuffix(")").partition(":")
        if detail and what not in ("IDX", "CNT"):
            raise ValueError(f"{entry!r}: expected (IDX:...) or (CNT:...) after the GPUs")
        if what != "IDX" or _MIG_TYPE.search(kind):
            continue
        listed_gpus = indices(listed)
        if len(parts) > 2 and count and int(count) != len(listed_gpus):
            raise ValueError(f"{entry!r}: {count} GPUs, but IDX lists {len(listed_gpus)}")
        found.extend(listed_gpus)
    return sorted(set(found))


def _digits(text: str) -> bool:
    """ASCII digits only (str.isdigit also takes '²', which int() refuses)."""
    return text.isascii() and text.isdigit()


def _entries(gres: str) -> list[str]:
    """A GRES list split at the commas outside parentheses, empty entries dropped.

    Raises:
        ValueError: on a parenthesis closed that was never opened, or one never closed.
    """
    try:
        entries = split_outside(gres, "()", nested=True)
    except ValueError as unbalanced:
        raise ValueError(f"{gres!r}: {unbalanced}") from None
    return [e for e in entries if e]
