"""The vectorised Prometheus parser agrees with the exact line parser, whatever the text."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from warehouse.ingest.promblock import BlockParser
from warehouse.ingest.promline import Labels, LineError, escape, parse_labels, parse_line
from warehouse.ingest.textblocks import blocks

# Label values: anything but surrogates (they cannot be written as UTF-8).
VALUES = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)


@given(VALUES)
def test_escaped_label_values_parse_back(value: str) -> None:
    sample = parse_line(f'm{{a="{escape(value)}",Hostname="h"}} 1')
    assert sample is not None
    assert dict(parse_labels(sample.labels)) == {"a": value, "Hostname": "h"}


@given(st.lists(VALUES, min_size=1, max_size=30))
def test_escaped_label_values_survive_the_block_parser(values: list[str]) -> None:
    text = "".join(f'm{{v="{escape(v)}",i="{i}"}} {i}\n' for i, v in enumerate(values))
    samples, rejected = _parse(text.encode(), 32)
    assert not rejected
    assert {int(float(value)): dict(labels)["v"] for _, labels, (value, _) in samples} == dict(
        enumerate(values)
    )


# Lines built from pieces that are usually right and sometimes not.
NAMES = st.sampled_from(["DCGM_FI_DEV_GPU_UTIL", "up", "a:b_c", "9bad", "", "x y", "#"])
LABEL_TEXT = st.one_of(
    st.builds(lambda v: f'gpu="{escape(v)}",Hostname="h"', VALUES),
    st.sampled_from(["", 'a="}"', 'a="1",', "a=1", 'a="1" b="2"', 'a="1",a="2"', ' a = "x" ']),
)
TAILS = st.sampled_from(
    [" 1", " 1.5 1700000000000", " NaN", " +Inf 5", " -inf", "  2   3 ", " 1e3\r", " x",
     " 1 2 3", "\t4\t5", " 0x10", " 1 99999999999999999999", " .5", " 1. -7", " ١", "1",
     " 1 +5", " infinity", " 1_0", " 1e", ""]
)  # fmt: skip
LINES = st.one_of(
    st.builds(lambda n, lt, t: f"{n}{{{lt}}}{t}", NAMES, LABEL_TEXT, TAILS),
    st.builds(lambda n, t: f"{n}{t}", NAMES, TAILS),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=30),
    st.sampled_from(["", "   ", "# HELP x y", "  # c", "{}", "}{", 'x{a="b"', "x}"]),
)


@settings(max_examples=examples(3))
@given(st.lists(LINES, max_size=25), st.sampled_from([16, 64, 4096]))
def test_block_parser_agrees_with_the_line_parser(lines: list[str], block_bytes: int) -> None:
    text = "\n".join(lines).encode()
    samples, rejected = _parse(text, block_bytes)
    expected_samples, expected_rejected = [], []
    for number, line in enumerate(text.decode().split("\n"), 1):
        try:
            sample = parse_line(line)
        except LineError:
            expected_rejected.append(number)
            continue
        if sample is not None:
            expected_samples.append(
                (sample.name, parse_labels(sample.labels), _key(sample.value, sample.timestamp_ms))
            )
    assert rejected == expected_rejected
    assert sorted(samples, key=repr) == sorted(expected_samples, key=repr)


def _key(value: float, stamp: int | None) -> tuple[str, int | None]:
    return ("nan" if math.isnan(value) else repr(value)), stamp


#: A sample as the tests compare them: name, labels, value key.
SampleKey = tuple[str, Labels, tuple[str, int | None]]


def _parse(text: bytes, block_bytes: int) -> tuple[list[SampleKey], list[int]]:
    """(name, labels, value key) per sample and the rejected line numbers, via BlockParser."""
    sets: list[Labels] = []

    def label_set_id(labels: Labels) -> int:
        sets.append(labels)
        return len(sets) - 1

    parser = BlockParser(label_set_id)
    samples: list[SampleKey] = []
    rejected: list[int] = []
    for block in blocks(io.BytesIO(text), block_bytes):
        found = parser.parse(block)
        for r in found.rejects:
            assert r.line is not None  # the block parser numbers every line it rejects
            rejected.append(r.line)
        for name, set_id, value, stamp, stamped in zip(
            found.names.tolist(), found.label_sets.tolist(), found.values.tolist(),
            found.timestamps_ms.tolist(), found.stamped.tolist(), strict=True,
        ):  # fmt: skip
            key = _key(value, stamp if stamped else None)
            samples.append((parser.names[name], sets[set_id], key))
    return samples, sorted(rejected)


def test_regular_exporter_lines_never_take_the_per_line_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The speed of `wanka ingest dcgm` rests on this: only odd lines go to Python one by one.
    import warehouse.ingest.promblock as promblock

    calls: list[str] = []
    monkeypatch.setattr(promblock, "parse_line", lambda line: calls.append(line))
    lines = [
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
        *(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{g}",modelName="NVIDIA H100 80GB HBM3",'
            f'Hostname="n1",pod="a{{b}},c"}} {v}{stamp}{end}'
            for g in range(8)
            for v, stamp, end in (("87", "", ""), ("0.5", " 1700000000000", "\r"), ("NaN", "", ""))
        ),
        "",
    ]
    samples, rejected = _parse("\n".join(lines).encode(), 4096)
    assert len(samples) == 24 and not rejected and not calls
