"""Reading text in large blocks cut at line ends, so a parser can work on whole lines at once.

A 5 GB scrape file is read through one buffer of `block_bytes` (plus a little padding) that is
reused for every block: memory stays at one block whatever the input's size, and numpy can
find every line end of a block in one pass. A line longer than a block grows the buffer until
it fits; a last line without a newline gets one; a UTF-8 byte order mark at the start is
skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

#: Bytes of zeros kept after every block: readers may load a few bytes past a line's end
#: (a 12-byte string view) without leaving the buffer.
PADDING = 16

_NEWLINE = 10
_BOM = b"\xef\xbb\xbf"


@dataclass
class Block:
    """Whole lines of text: `data[:size]` ends with a newline; `first_line` is 1-based.

    `data` is the reader's buffer, overwritten by the next block: copy what must outlive it.
    """

    data: bytearray
    size: int
    first_line: int
    lines: int | None = None  # a parser that counts line ends anyway may set it: saves a pass

    @property
    def array(self) -> np.ndarray:
        """The block's bytes as uint8, without copying (padding excluded)."""
        return np.frombuffer(self.data, np.uint8, self.size)

    def line_ends(self) -> np.ndarray:
        """Offsets of each line's newline, in order.

        >>> Block(bytearray(b"a\\n\\nbc\\n" + bytes(PADDING)), 6, 1).line_ends().tolist()
        [1, 2, 5]
        """
        return np.flatnonzero(self.array == _NEWLINE)


def blocks(stream: IO[bytes], block_bytes: int = 32 << 20) -> Iterator[Block]:
    """Yield `stream` as blocks of whole lines, each about `block_bytes` long.

    >>> import io
    >>> [bytes(b.data[: b.size]) for b in blocks(io.BytesIO(b"a\\nbb\\nccc"), 4)]
    [b'a\\n', b'bb\\n', b'ccc\\n']
    >>> [b.first_line for b in blocks(io.BytesIO(b"a\\nbb\\nccc"), 4)]
    [1, 2, 3]
    >>> [bytes(b.data[: b.size]) for b in blocks(io.BytesIO(b"\\xef\\xbb\\xbfa"))]
    [b'a\\n']
    """
    capacity = max(block_bytes, 1)
    buffer = bytearray(capacity + 1 + PADDING)  # +1: room for a missing last newline
    filled = 0  # bytes of `buffer` holding input not yet handed out
    line = 1
    eof = False
    first = True
    while not eof or filled:
        if not eof:
            got = _fill(stream, buffer, filled, capacity)
            eof = got == 0 or filled + got < capacity
            filled += got
            if first and buffer.startswith(_BOM):
                buffer[: filled - 3] = buffer[3:filled]
                filled -= 3
            first = False
        cut = buffer.rfind(b"\n", 0, filled)
        if cut < 0 and not eof:
            # No line end in a full buffer: the line is longer than a block, so grow.
            # A new buffer, not an extended one: arrays of the last block may still export it.
            capacity *= 2
            grown = bytearray(capacity + 1 + PADDING)
            grown[:filled] = buffer[:filled]
            buffer = grown
            continue
        if cut < 0 or (eof and cut < filled - 1):
            # The last line lacks its newline: give it one (the padding has room).
            buffer[filled] = _NEWLINE
            filled += 1
            cut = filled - 1
        size = cut + 1
        buffer[filled : filled + PADDING] = bytes(PADDING)
        block = Block(buffer, size, line)
        yield block
        line += block.lines if block.lines is not None else buffer.count(b"\n", 0, size)
        rest = filled - size
        buffer[:rest] = buffer[size:filled]
        filled = rest


def _fill(stream: IO[bytes], buffer: bytearray, start: int, end: int) -> int:
    """Read into `buffer[start:end]` until it is full or the stream ends; bytes read."""
    view = memoryview(buffer)
    got = 0
    try:
        while start + got < end:
            n = stream.readinto(view[start + got : end])  # type: ignore[attr-defined]
            if not n:
                break
            got += n
    finally:
        view.release()
    return got


def lines(stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without its line end) for every line; bad UTF-8 replaced.

    For formats read line by line (small files, wide rows); memory stays at one line.

    >>> import io
    >>> list(lines(io.BytesIO(b"\\xef\\xbb\\xbfa\\r\\n\\nb")))
    [(1, 'a'), (2, ''), (3, 'b')]
    """
    for number, raw in enumerate(stream, 1):
        if number == 1 and raw.startswith(_BOM):
            raw = raw[3:]
        yield number, raw.decode("utf-8", "replace").rstrip("\r\n")
