"""One line of Prometheus exposition text, parsed exactly: the reference the fast path follows.

    NAME{label="value",...} VALUE [TIMESTAMP_MS]

`promblock` parses whole blocks with vectorised kernels and hands every line it is not sure
of to `parse_line`, which decides: a sample, nothing (comment, blank), or a `LineError`
naming what was expected. Label values unescape `\\"`, `\\\\` and `\\n` as Prometheus writes
them; a quoted value may hold `}` and `,`. Values are numbers, `NaN`, `+Inf` or `-Inf`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_PAIR = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*(,|$)')
# ASCII digits only (Python's \d takes any script's); NaN and Inf in any case, as Go reads them.
_VALUE = r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:nan|inf(?:inity)?))"
_TAIL_AFTER_LABELS = re.compile(rf"\s*({_VALUE})(?:[ \t]+([+-]?[0-9]+))?\s*$")
_TAIL_AFTER_NAME = re.compile(rf"[ \t]+({_VALUE})(?:[ \t]+([+-]?[0-9]+))?\s*$")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPED = {"n": "\n", "\\": "\\", '"': '"'}
#: Timestamps beyond this many ms from 1970 (about year 294,000) do not fit a TIMESTAMPTZ.
MAX_TIMESTAMP_MS = 9_223_372_036_854
EXPECTED_TAIL = "a value (number, NaN, +Inf or -Inf) and an optional integer timestamp in ms"

Labels = tuple[tuple[str, str], ...]


class LineError(ValueError):
    """A line that is not a sample; the message says what was expected."""


@dataclass(frozen=True)
class Sample:
    """One parsed sample line; `labels` is the raw text between the braces."""

    name: str
    labels: str
    value: float
    timestamp_ms: int | None


def parse_line(line: str) -> Sample | None:
    """A sample, or None for a comment or blank line; LineError when it is neither.

    >>> parse_line('up{job="a,}b"} 1 1700000000000')
    Sample(name='up', labels='job="a,}b"', value=1.0, timestamp_ms=1700000000000)
    >>> parse_line("node_load1 -Inf"), parse_line("# HELP x y"), parse_line("  ")
    (Sample(name='node_load1', labels='', value=-inf, timestamp_ms=None), None, None)
    >>> parse_line('x{a="b"} 1.5.6')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    warehouse.ingest.promline.LineError: expected a value (number, ...) ... found '1.5.6'
    """
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    found = NAME.match(text)
    if found is None:
        raise LineError(
            f"expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) at the start of the line, "
            f"found {text[:40]!r}"
        )
    name, at = found.group(), found.end()
    if text.startswith("{", at):
        close = text.rfind("}")
        if close < at:
            raise LineError(f"expected '}}' closing the labels of {name}")
        labels = text[at + 1 : close]
        parse_labels(labels)
        tail, pattern, where = text[close + 1 :], _TAIL_AFTER_LABELS, f"{name}{{...}}"
    else:
        labels, tail, pattern, where = "", text[at:], _TAIL_AFTER_NAME, name
    parts = pattern.match(tail)
    if parts is None:
        raise LineError(f"expected {EXPECTED_TAIL} after {where}, found {tail.strip()[:40]!r}")
    stamp = int(parts.group(2)) if parts.group(2) else None
    if stamp is not None and abs(stamp) > MAX_TIMESTAMP_MS:
        raise LineError(f"timestamp {stamp} ms is out of range (at most {MAX_TIMESTAMP_MS})")
    return Sample(name, labels, float(parts.group(1)), stamp)


def parse_labels(text: str) -> Labels:
    """The (name, value) pairs of the text between a sample's braces, values unescaped.

    >>> parse_labels(r'gpu="0", pod="a\\"b\\\\c\\nd",')
    (('gpu', '0'), ('pod', 'a"b\\\\c\\nd'))
    >>> parse_labels("")
    ()
    >>> parse_labels('gpu=0')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    warehouse.ingest.promline.LineError: expected name="value" ... at character 1, found 'gpu=0'
    """
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    at, end = 0, len(text)
    while at < end and not text[at:].isspace():
        found = _PAIR.match(text, at)
        if found is None:
            raise LineError(
                f'expected name="value" in the labels at character {at + 1}, '
                f"found {text[at : at + 40].strip()!r}"
            )
        name = found.group(1)
        if name in seen:
            raise LineError(f"label {name!r} given twice")
        seen.add(name)
        pairs.append((name, unescape(found.group(2))))
        at = found.end()
        if not found.group(3):
            break
    return tuple(pairs)


def unescape(value: str) -> str:
    r"""A label value as written (`\"`, `\\`, `\n` escaped) turned back into its text.

    An unknown escape keeps its backslash, as Prometheus does.

    >>> unescape(r'a\"b\\c\nd\t')
    'a"b\\c\nd\\t'
    """
    if "\\" not in value:
        return value
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(0)), value)


def escape(value: str) -> str:
    r"""A label value escaped for exposition text; `unescape(escape(v)) == v`.

    >>> escape('a"b\\c\nd')
    'a\\"b\\\\c\\nd'
    """
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
