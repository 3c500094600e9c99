"""Slurm host lists: expand what sacct prints, compress what we write, and round-trip."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warehouse.ingest import scontrol_fields
from warehouse.jobs import hostlist
from warehouse.jobs.hostlist import compress, expand, sort_key, split_outside


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


#: Host-list text with balanced, unnested brackets (commas inside and outside them).
_bracketed = st.lists(
    st.one_of(st.text("ab1 ,", max_size=4), st.text("ab1,-", max_size=4).map("[{}]".format)),
    max_size=5,
).map("".join)


@given(_bracketed)
def test_split_outside_cuts_at_every_comma_outside_brackets_and_nowhere_else(text: str) -> None:
    """A comma is outside brackets when no `]` follows it before a `[` (a regex, not a scan);
    the same holds for a GRES list's parentheses."""
    expected = [piece.strip() for piece in re.split(r",(?![^\[]*\])", text)]
    assert split_outside(text) == expected
    to_parens = str.maketrans("[]", "()")
    gres = split_outside(text.translate(to_parens), "()", nested=True)
    assert gres == [piece.translate(to_parens) for piece in expected]


@pytest.mark.parametrize(
    ("text", "brackets", "nested", "error"),
    [
        ("a[b[c]]", "[]", False, "nested '[' at position 3"),
        ("a(b(c))", "()", True, None),
        ("a],b", "[]", False, "']' without '[' at position 1"),
        ("gpu:1)", "()", True, "')' without '(' at position 5"),
        ("gpu[1,2", "[]", False, "'[' is never closed"),
    ],
)
def test_split_outside_names_what_is_wrong_where(
    text: str, brackets: str, nested: bool, error: str | None
) -> None:
    if error is None:
        assert split_outside(text, brackets, nested=nested) == [text]
    else:
        with pytest.raises(ValueError, match=re.escape(error)):
            split_outside(text, brackets, nested=nested)


def test_a_gres_error_names_the_gres_text() -> None:
    with pytest.raises(ValueError, match=re.escape("'gpu:1)': ')' without '(' at position 5")):
        scontrol_fields._entries("gpu:1)")
