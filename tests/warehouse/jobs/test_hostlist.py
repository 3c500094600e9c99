"""Slurm host lists: expand what sacct prints, compress what we write, and round-trip."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from warehouse.ingest import scontrol_fields
from warehouse.jobs import hostlist
from warehouse.jobs.hostlist import compress, expand, sort_key


@pytest.mark.parametrize(
    ("spec", "hosts"),
    [
        ("gpu[001-003,007],login1", ["gpu001", "gpu002", "gpu003", "gpu007", "login1"]),
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("h100a0001", ["h100a0001"]),
        (" a1 , b[2-3] ", ["a1", "b2", "b3"]),
        ("", []),
        ("None assigned", []),
    ],
)
def test_expand(spec: str, hosts: list[str]) -> None:
    assert expand(spec) == hosts


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ("gpu[001-003", "never closed"),
        ("gpu001]", "without '['"),
        ("gpu[[1]]", "nested"),
        ("gpu[3-1]", "backwards"),
        ("gpu[a-b]", "not a number"),
        ("gpu[]", "not a number"),
        ("a,,b", "empty host name"),
        ("gpu[0-999999999]", "names more than 1,000,000 hosts"),
    ],
)
def test_expand_says_what_is_wrong(spec: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)):
        expand(spec)


def test_compress_sorts_naturally_and_keeps_padding() -> None:
    assert compress(["gpu001", "gpu002", "gpu003", "gpu007"]) == "gpu[001-003,007]"
    assert compress(["n10", "n9", "n11", "n9"]) == "n[9-11]"
    assert compress(["n08", "n9"]) == "n[08,9]"
    assert compress(["login", "gpu2", "gpu1"]) == "gpu[1-2],login"
    assert compress([]) == ""


@pytest.mark.parametrize("bad", ["a,b", "a[1]", "two words", ""])
def test_compress_refuses_names_a_host_list_cannot_carry(bad: str) -> None:
    with pytest.raises(ValueError, match="cannot be written"):
        compress([bad])


def test_none_assigned_is_what_sacct_prints_for_no_nodes() -> None:
    assert hostlist.NONE_ASSIGNED == "None assigned"


_host = st.builds(
    lambda prefix, number, width: prefix + str(number).zfill(width),
    st.sampled_from(["gpu", "n", "h100a", "rack1-n", "x-"]),
    st.integers(0, 1200),
    st.integers(0, 4),
) | st.sampled_from(["login", "mgmt-a", "head"])


@given(st.lists(_host, max_size=40))
def test_expand_undoes_compress(hosts: list[str]) -> None:
    text = compress(hosts)
    assert expand(text) == sorted(set(hosts), key=sort_key)
    assert compress(expand(text)) == text


# The two splitters `split_outside` replaced, as they were, to hold it to both behaviours.
def _old_host_list_split(text: str, spec: str) -> list[str]:
    items: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"host list {spec!r}: nested '[' at position {i}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"host list {spec!r}: ']' without '[' at position {i}")
        elif char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise ValueError(f"host list {spec!r}: '[' is never closed")
    items.append(text[start:].strip())
    if any(not item for item in items):
        raise ValueError(f"host list {spec!r}: empty host name between commas")
    return items


def _old_gres_entries(gres: str) -> list[str]:
    entries, depth, start = [], 0, 0
    for i, char in enumerate(gres):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"{gres!r}: ')' without '('")
        elif char == "," and depth == 0:
            entries.append(gres[start:i].strip())
            start = i + 1
    if depth:
        raise ValueError(f"{gres!r}: '(' is never closed")
    entries.append(gres[start:].strip())
    return [e for e in entries if e]


def _outcome(split: Callable[[], list[str]]) -> list[str] | str:
    try:
        return split()
    except ValueError as error:
        return f"ValueError: {error}"


_list_text = st.text(alphabet="ab1[](), ", max_size=16)


@given(_list_text)
def test_expand_splits_a_host_list_as_before(spec: str) -> None:
    """The same errors word for word, and the hosts of the same items."""
    assume(spec.strip())  # `expand` never split an empty list
    old = _outcome(lambda: _old_host_list_split(spec.strip(), spec))
    new = _outcome(lambda: expand(spec))
    if isinstance(old, str):
        assert new == old
    elif isinstance(new, list):
        assert new == [host for item in old for host in expand(item)]


@given(_list_text)
def test_split_outside_splits_a_gres_list_as_before(gres: str) -> None:
    """The same pieces and the same errors; a ')' never opened now also says where."""
    old = _outcome(lambda: _old_gres_entries(gres))
    new = _outcome(lambda: scontrol_fields._entries(gres))
    assert re.sub(r" at position \d+$", "", new) == old if isinstance(new, str) else new == old
