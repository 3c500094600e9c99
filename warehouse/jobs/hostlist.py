"""Slurm host lists: `gpu[001-003,007],login1` and back.

Slurm prints a job's nodes in host-list syntax (sacct NodeList, squeue, scontrol). `expand` turns
that text into host names, `compress` turns host names into that text. Zero padding is part of a
name: `n[08-10]` is n08, n09, n10, while `n[8-10]` is n8, n9, n10. Only the last run of digits in
a name is ranged when compressing, as `scontrol show hostlist` does; expanding accepts several
bracket groups (`rack[1-2]-n[01-02]`), the first group varying slowest.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

#: sacct's NodeList for a job that never got nodes.
NONE_ASSIGNED = "None assigned"

_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<digits>\d+)$")


#: The most hosts one range of a host list may name: a cluster of 100,000 GPUs has 12,500
#: hosts, so a larger range is a damaged line, not a cluster (and would take memory to expand).
MAX_RANGE = 1_000_000


def expand(spec: str) -> list[str]:
    """Host names of a Slurm host list, in the order the list gives them.

    Args:
        spec: host-list text, e.g. `gpu[001-003,007],login1`; `''` and `'None assigned'` give
            no hosts.

    Returns:
        The host names, duplicates kept as written.

    Raises:
        ValueError: on unbalanced brackets, an empty or reversed range, or a non-numeric bound.

    >>> expand("gpu[001-003,007],login1")
    ['gpu001', 'gpu002', 'gpu003', 'gpu007', 'login1']
    >>> expand("rack[1-2]-n[01-02]")
    ['rack1-n01', 'rack1-n02', 'rack2-n01', 'rack2-n02']
    >>> expand("n[9-11]")
    ['n9', 'n10', 'n11']
    """
    text = spec.strip()
    if not text or text == NONE_ASSIGNED:
        return []
    try:
        items = split_outside(text)
    except ValueError as unbalanced:
        raise ValueError(f"host list {spec!r}: {unbalanced}") from None
    if any(not item for item in items):
        raise ValueError(f"host list {spec!r}: empty host name between commas")
    hosts: list[str] = []
    for item in items:
        hosts.extend(_expand_item(item, spec))
    return hosts


def compress(hosts: Iterable[str]) -> str:
    """The shortest Slurm host list naming `hosts` (sorted naturally, duplicates dropped).

    Args:
        hosts: host names; none may contain `[`, `]`, `,` or whitespace.

    Returns:
        Host-list text; `''` for no hosts.

    Raises:
        ValueError: for a name host-list syntax cannot carry.

    >>> compress(["gpu001", "gpu002", "gpu003", "gpu007"])
    'gpu[001-003,007]'
    >>> compress(["n10", "n9", "login", "n11"])
    'login,n[9-11]'
    >>> compress(["a1"])
    'a1'
    """
    numbered: dict[str, list[tuple[int, str]]] = {}
    plain: set[str] = set()
    for host in set(hosts):
        if not host or any(c in host for c in "[],") or host.split() != [host]:
            raise ValueError(f"host name {host!r} cannot be written in a Slurm host list")
        match = _NUMBERED.match(host)
        if match is None:
            plain.add(host)
        else:
            numbered.setdefault(match["prefix"], []).append((int(match["digits"]), match["digits"]))
    parts: list[tuple[str, str]] = [(host, host) for host in plain]
    for prefix, numbers in numbered.items():
        ranges = _ranges(sorted(numbers, key=lambda n: (n[0], len(n[1]))))
        if len(ranges) == 1 and "-" not in ranges[0]:
            parts.append((prefix, prefix + ranges[0]))
        else:
            parts.append((prefix, f"{prefix}[{','.join(ranges)}]"))
    return ",".join(text for _, text in sorted(parts))


def sort_key(host: str) -> tuple[str, int, int, str]:
    """The natural order `compress` lists hosts in: prefix, then number, then padding.

    >>> sorted(["n10", "n9", "n09"], key=sort_key)
    ['n9', 'n09', 'n10']
    """
    match = _NUMBERED.match(host)
    if match is None:
        return (host, -1, 0, host)
    return (match["prefix"], int(match["digits"]), len(match["digits"]), host)


def _ranges(numbers: list[tuple[int, str]]) -> list[str]:
    """Runs of consecutive numbers that one padding width writes exactly."""
    out: list[str] = []
    run: list[tuple[int, str]] = []
    for value, digits in numbers:
        if run:
            first_width = len(run[0][1])
            if value == run[-1][0] + 1 and str(value).zfill(first_width) == digits:
                run.append((value, digits))
                continue
            out.append(_run_text(run))
        run = [(value, digits)]
    if run:
        out.append(_run_text(run))
    return out


def _run_text(run: list[tuple[int, str]]) -> str:
    return run[0][1] if len(run) == 1 else f"{run[0][1]}-{run[-1][1]}"


def split_outside(text: str, brackets: str = "[]", *, nested: bool = False) -> list[str]:
    """`text` split at the commas outside brackets, each piece stripped (empty ones kept).

    One rule for Slurm's comma lists whose items hold commas of their own: a host list's
    `gpu[1,3],login` and a GRES list's `gpu:2(IDX:1,3),nvme:1` (`brackets="()"`).

    Args:
        text: the list.
        brackets: the opening and the closing bracket.
        nested: whether a bracket may open inside another (a host list's may not).

    Raises:
        ValueError: on a bracket closed that was never opened, one never closed, or one opened
            inside another where `nested` is false; the caller names the text.

    >>> split_outside("gpu[1,3], login,")
    ['gpu[1,3]', 'login', '']
    >>> split_outside("gpu:2(IDX:1,3),nvme:1", "()")
    ['gpu:2(IDX:1,3)', 'nvme:1']
    >>> split_outside("a]")
    Traceback (most recent call last):
    ValueError: ']' without '[' at position 1
    """
    opening, closing = brackets[0], brackets[1]
    pieces: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(text):
        if char == opening:
            depth += 1
            if depth > 1 and not nested:
                raise ValueError(f"nested {opening!r} at position {i}")
        elif char == closing:
            depth -= 1
            if depth < 0:
                raise ValueError(f"{closing!r} without {opening!r} at position {i}")
        elif char == "," and depth == 0:
            pieces.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise ValueError(f"{opening!r} is never closed")
    pieces.append(text[start:].strip())
    return pieces


def _expand_item(item: str, spec: str) -> list[str]:
    """`rack[1-2]-n[01-02]` → the cartesian product of its bracket groups."""
    pieces = re.split(r"\[([^\]]*)\]", item)
    # re.split with one capture group alternates literal text and bracket contents.
    choices: list[list[str]] = []
    for index, piece in enumerate(pieces):
        choices.append(_bracket_values(piece, spec) if index % 2 else [piece])
    return ["".join(parts) for parts in itertools.product(*choices)]


def _bracket_values(body: str, spec: str) -> list[str]:
    values: list[str] = []
    for part in body.split(","):
        part = part.strip()
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"host list {spec!r}: {part!r} is not a number or a range a-b")
        if not dash:
            values.append(low)
            continue
        if int(high) < int(low):
            raise ValueError(f"host list {spec!r}: range {part!r} runs backwards")
        if int(high) - int(low) >= MAX_RANGE:
            raise ValueError(
                f"host list {spec!r}: range {part!r} names more than {MAX_RANGE:,} hosts"
            )
        width = len(low)
        values.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return values
