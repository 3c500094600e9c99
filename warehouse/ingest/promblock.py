"""Prometheus exposition text parsed a block at a time, at the speed of the machine.

A scrape file repeats itself: every line of a GPU carries the same label text, and there are
only as many label texts as GPUs × label sets, whatever the number of metrics and scrapes. So
a block (tens of MB of whole lines, see `textblocks`) is cut with numpy, never with a Python
loop over lines:

1. one pass finds every newline, `{` and `}`; a line's name runs to its first `{`, its label
   text to its last `}` (a value or timestamp never holds one), the rest is value and time;
2. names and label texts become Arrow string views into the block (no copy) and are
   dictionary-encoded; only the *distinct* ones are parsed in Python (`promline`) and resolved
   by the caller's `label_set_id`, cached for the whole file;
3. values and timestamps are cast by polars kernels.

Any line the fast path is not sure of (no labels, odd spacing, a bad value, a comment with
leading blanks) goes to `promline.parse_line`, which decides exactly: a sample, nothing, or a
reject naming what was expected. The fast path only ever accepts what `parse_line` accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.ingest.base import Reject
from warehouse.ingest.promline import (
    MAX_TIMESTAMP_MS,
    NAME,
    Labels,
    LineError,
    parse_labels,
    parse_line,
)
from warehouse.ingest.textblocks import PADDING, Block

#: Given a new distinct label set: its id (>= 0), or the reason its lines are rejected.
LabelSetId = Callable[[Labels], "int | str"]

_NEWLINE, _OPEN, _CLOSE, _HASH = 10, 123, 125, 35
_NAME_START = np.zeros(256, bool)
for _c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:":
    _NAME_START[_c] = True
#: Masks keeping the first 0..4 bytes of a little-endian 32-bit word.
_KEEP = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF], np.uint32)
NO_TIMESTAMP = "no timestamp on the line, and neither --at nor the file's time to use instead"


@dataclass
class Samples:
    """The samples of one block, as ids into the parser's names and the caller's label sets."""

    names: np.ndarray  # int32, index into BlockParser.names
    label_sets: np.ndarray  # int32, ids label_set_id returned
    values: np.ndarray  # float64
    timestamps_ms: np.ndarray  # int64; 0 where not stamped
    stamped: np.ndarray  # bool: the line carried a timestamp
    rejects: list[Reject] = field(default_factory=list)


class BlockParser:
    """Parses blocks of one file; names and label sets are remembered across its blocks."""

    def __init__(self, label_set_id: LabelSetId, *, require_timestamp: bool = False) -> None:
        self.names: list[str] = []
        self._name_ids: dict[str, int] = {}  # -1: not a metric name
        self._label_sets: dict[str, int] = {}  # -1: rejected, for the reason in _reasons
        self._reasons: dict[str, str] = {}
        self._label_set_id = label_set_id
        self._require_timestamp = require_timestamp
        self._scratch = (np.empty(0, bool), np.empty(0, bool))

    def parse(self, block: Block) -> Samples:
        """All samples of `block`, and a reject for every line that is not one."""
        data, size = _valid_utf8(block.data, block.size)
        arr = np.frombuffer(data, np.uint8, size)
        at, char = self._find(arr)
        # In the sorted run of newlines and braces, a line's first brace follows the newline
        # before it and its last brace precedes its own newline.
        newline = np.flatnonzero(char == _NEWLINE)
        block.lines = len(newline)
        ends = at[newline]
        starts = np.empty_like(ends)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        first = arr[starts]  # the newline itself for an empty line
        after = np.empty_like(newline)
        after[:1] = 0
        after[1:] = newline[:-1] + 1
        before = newline - 1
        open_ = at[np.minimum(after, len(at) - 1)]
        close = at[np.maximum(before, 0)]
        fast = (
            _NAME_START[first]
            & (before > after)  # two braces or more in the line
            & (char[np.minimum(after, len(at) - 1)] == _OPEN)
            & (char[np.maximum(before, 0)] == _CLOSE)
        )
        other = (ends > starts) & (first != _HASH) & ~fast
        lines = np.flatnonzero(fast)
        st, op, cl, en = starts[lines], open_[lines], close[lines], ends[lines]
        names, sets, values, stamps, stamped, good = self._fast(data, st, op, cl, en)
        retry = np.union1d(np.flatnonzero(other), lines[~good])
        out = Samples(names[good], sets[good], values[good], stamps[good], stamped[good])
        self._slow(data, starts, ends, retry, block.first_line, out)
        return out

    # -- the vectorised path ---------------------------------------------------------------

    def _find(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Offsets of every newline, `{` and `}`, and which it is (buffers reused)."""
        hit, tmp = self._scratch
        if len(hit) < len(arr):
            hit, tmp = np.empty(len(arr), bool), np.empty(len(arr), bool)
            self._scratch = (hit, tmp)
        hit, tmp = hit[: len(arr)], tmp[: len(arr)]
        np.equal(arr, _NEWLINE, out=hit)
        np.equal(arr, _OPEN, out=tmp)
        np.logical_or(hit, tmp, out=hit)
        np.equal(arr, _CLOSE, out=tmp)
        np.logical_or(hit, tmp, out=hit)
        at = np.flatnonzero(hit)
        return at, arr[at]

    def _fast(
        self,
        data: bytes | bytearray,
        st: np.ndarray,
        op: np.ndarray,
        cl: np.ndarray,
        en: np.ndarray,
    ) -> tuple[np.ndarray, ...]:
        """Names, label sets, values, timestamps, stamped, and which lines all of them hold."""
        buffer = pa.py_buffer(data)
        words = np.ndarray((len(data) - 3,), "<u4", buffer=data, strides=(1,))
        name_codes, name_texts = _encode(_views(words, buffer, st, op - st))
        set_codes, set_texts = _encode(_views(words, buffer, op + 1, cl - op - 1))
        names = _ids(name_texts, self._name_ids, self._name_id)[name_codes]
        sets = _ids(set_texts, self._label_sets, self._label_set)[set_codes]
        tails = pl.from_arrow(_views(words, buffer, cl + 1, en - cl - 1))
        assert isinstance(tails, pl.Series)
        parts = tails.str.strip_chars().str.splitn(" ", 2).struct.unnest()
        values = parts[:, 0].cast(pl.Float64, strict=False)
        stamp_text = parts[:, 1]
        stamps = stamp_text.cast(pl.Int64, strict=False)
        stamped = stamp_text.is_not_null().to_numpy()
        stamp_ok = stamps.abs() <= MAX_TIMESTAMP_MS
        good = (names >= 0) & (sets >= 0) & values.is_not_null().to_numpy()
        good &= np.where(stamped, stamp_ok.fill_null(False).to_numpy(), not self._require_timestamp)
        return (
            names,
            sets,
            values.fill_null(0.0).to_numpy(),
            stamps.fill_null(0).to_numpy(),
            stamped,
            good,
        )

    def _name_id(self, name: str) -> int:
        found = self._name_ids.get(name)
        if found is None:
            found = -1 if NAME.fullmatch(name) is None else len(self.names)
            if found >= 0:
                self.names.append(name)
            self._name_ids[name] = found
        return found

    def _label_set(self, text: str) -> int:
        """The caller's id for a label text; -1 with the reason in `_reasons` (cached)."""
        found = self._label_sets.get(text)
        if found is None:
            try:
                given = self._label_set_id(parse_labels(text))
            except LineError as error:
                given = str(error)
            if isinstance(given, str):
                self._reasons[text] = given
            found = self._label_sets[text] = given if isinstance(given, int) else -1
        return found

    # -- the exact path --------------------------------------------------------------------

    def _slow(
        self,
        data: bytes | bytearray,
        starts: np.ndarray,
        ends: np.ndarray,
        lines: np.ndarray,
        first_line: int,
        out: Samples,
    ) -> None:
        """Decide each of `lines` with `parse_line`; append its sample or its reject to `out`."""
        if not len(lines):
            return
        rows: list[tuple[int, int, float, int, bool]] = []
        for index in lines.tolist():
            raw = bytes(data[starts[index] : ends[index]]).decode("utf-8", "replace")
            raw = raw.rstrip("\r")
            number = first_line + index
            try:
                sample = parse_line(raw)
            except LineError as error:
                out.rejects.append(Reject(number, str(error), raw))
                continue
            if sample is None:
                continue
            set_id = self._label_set(sample.labels)
            if set_id < 0:
                reason = self._reasons[sample.labels]
                out.rejects.append(Reject(number, str(reason), raw, "labels"))
                continue
            stamp = sample.timestamp_ms
            if stamp is None and self._require_timestamp:
                out.rejects.append(Reject(number, NO_TIMESTAMP, raw))
                continue
            name_id = self._name_id(sample.name)
            rows.append((name_id, set_id, sample.value, stamp or 0, stamp is not None))
        if rows:
            names, sets, values, stamps, stamped = zip(*rows, strict=True)
            out.names = np.concatenate([out.names, np.array(names, np.int32)])
            out.label_sets = np.concatenate([out.label_sets, np.array(sets, np.int32)])
            out.values = np.concatenate([out.values, np.array(values, np.float64)])
            out.timestamps_ms = np.concatenate([out.timestamps_ms, np.array(stamps, np.int64)])
            out.stamped = np.concatenate([out.stamped, np.array(stamped, bool)])


def _views(words: np.ndarray, buffer: pa.Buffer, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """An Arrow string_view array of `buffer[start : start + length]`, built without a copy.

    A view is 16 bytes: the length, then up to 12 bytes inline, or a 4-byte prefix, the
    buffer index (0) and the offset. `words` reads 4 unaligned bytes at any offset; the
    block's padding keeps the 12-byte reads inside the buffer.
    """
    n = len(start)
    view = np.zeros((n, 4), np.uint32)
    view[:, 0] = length
    view[:, 1] = words[start] & _KEEP[np.minimum(length, 4)]
    view[:, 3] = start
    short = np.flatnonzero(length <= 12)
    if len(short):
        at, size = start[short], length[short]
        view[short, 2] = words[at + 4] & _KEEP[np.clip(size - 4, 0, 4)]
        view[short, 3] = words[at + 8] & _KEEP[np.clip(size - 8, 0, 4)]
    return pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(view), buffer])


def _ids(texts: list[str], known: dict[str, int], resolve: Callable[[str], int]) -> np.ndarray:
    """The id of each text: looked up in C (`map`), resolved in Python only when new."""
    found = list(map(known.get, texts))
    if None in found:
        found = [resolve(t) if f is None else f for t, f in zip(texts, found, strict=True)]
    return np.array(found, np.int32)


def _encode(strings: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Codes per element, and the distinct strings in code order."""
    encoded = pc.dictionary_encode(strings)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    return codes, encoded.dictionary.to_pylist()


def _valid_utf8(data: bytearray, size: int) -> tuple[bytes | bytearray, int]:
    """The block as is when it is UTF-8 (nearly always ASCII), else with bad bytes replaced."""
    if size == 0 or int(np.frombuffer(data, np.uint8, size).max()) < 0x80:
        return data, size
    text = bytes(data[:size])
    try:
        text.decode("utf-8")
        return data, size
    except UnicodeDecodeError:
        fixed = text.decode("utf-8", "replace").encode("utf-8")
        return fixed + bytes(PADDING), len(fixed)
